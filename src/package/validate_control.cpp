// The reader's checks of the control layer kinds (validate.hpp): if, loop, scan (docs/package-format.md, "Control
// layers"). Their regions' nesting is checked with the program (validate.cpp); here the header words and every move:
// each range it reads lies in a readable element space, each it writes in a writable one, the two apart.
#include "package/validate.hpp"

namespace npuc::package {

namespace {

struct ControlChecks : LayerCheck {
  /// The header's n_moves (its last word) against the block's size, then each move; phases below `phases`.
  void moves(uint32_t phases, int64_t steps) const {
    const uint32_t h = controlHeaderWords(d.kind);
    if (w.size() < h) bad("{}: a parameter block of {} words, the header alone needs {}", what, w.size(), h);
    const uint64_t n = w[h - 1];
    if (w.size() != h + n * kMoveWords)
      bad("{}: the header says {} moves, the block holds {} words ({} + {} per move)", what, n, w.size(), h, kMoveWords);
    for (uint32_t i = 0; i < n; ++i) move(controlMove(d.kind, w, i), i, phases, steps);
  }

  void move(const ControlMove& m, uint32_t i, uint32_t phases, int64_t steps) const {
    const std::string mw = fmt::format("{}: move {}", what, i);
    if (m.phase >= phases) bad("{}: phase {} (this kind has phases 0..{})", mw, m.phase, phases - 1);
    if (m.count < 1 || m.rows < 1 || m.reverse > 1) bad("{}: count {}, rows {}, reverse {} (count and rows ≥ 1, reverse 0 or 1)", mw, m.count, m.rows, m.reverse);
    if (!m.indexed() && m.count != 1) bad("{}: a move with steps 0 is one copy (count 1), got count {}", mw, m.count);
    if (m.indexed() && steps >= 0 && m.count != steps) bad("{}: covers {} steps, the layer runs {}", mw, m.count, steps);
    if (m.indexed() && m.phase == 0 && d.kind != LayerKind::kIf) bad("{}: a move before the first step has steps 0", mw);
    const uint64_t src_bytes = controlMoveSpan(m, false), dst_bytes = controlMoveSpan(m, true);
    if (src_bytes > (uint64_t(1) << 32) - m.src || dst_bytes > (uint64_t(1) << 32) - m.dst)
      bad("{}: its ranges reach beyond the 32-bit address space", mw);
    const Element* s = spaceOf(m.src, src_bytes);
    const Element* t = spaceOf(m.dst, dst_bytes);
    if (!s || !t) bad("{}: [0x{:x}, +{}) → [0x{:x}, +{}) is not inside the element spaces", mw, m.src, src_bytes, m.dst, dst_bytes);
    if (!readableSpace(*s)) bad("{}: reads '{}'", mw, s->name);
    if (s->name == "weight" && m.src - s->addr + src_bytes > p.weights.size())
      bad("{}: reads beyond the {} bytes of the weight image", mw, p.weights.size());
    if (!writableSpace(*t)) bad("{}: writes '{}', which it may not write", mw, t->name);
    if (m.row_bytes && m.src < m.dst + dst_bytes && m.dst < m.src + src_bytes)
      bad("{}: its source [0x{:x}, +{}) and destination [0x{:x}, +{}) overlap", mw, m.src, src_bytes, m.dst, dst_bytes);
  }

  /// A one-element tensor of type t at address `addr`, written by the layer when `write`.
  void scalarAt(uint32_t addr, ElemType t, bool write, const char* name) const {
    const Element* s = spaceOf(addr, elemSize(t));
    if (!s || !(write ? writableSpace(*s) : writableSpace(*s) || s->name == "data_in"))
      bad("{}: {} at 0x{:x} is not in a space this layer may {}", what, name, addr, write ? "write" : "read");
  }

  void oneOf(const TensorRef& r, ElemType t, const char* name) const {
    if (r.type != t || r.numel() != 1) bad("{}: {} must be one {}, got {} {}", what, name, elemName(t), elemName(r.type), dimsStr(r));
  }

  void ifLayer() const {
    oneOf(x, ElemType::kBool, "the condition");
    moves(2, -1);
  }

  void loop() const {
    if (w.size() < 7) bad("{}: a parameter block of {} words (the header needs 7)", what, w.size());
    const uint32_t has_m = w[1], has_cond = w[2];
    if (has_m > 1 || has_cond > 1 || has_m + has_cond == 0 || d.n_in != has_m + has_cond)
      bad("{}: flags trip count {} and condition {} for {} inputs (one or both, one input each)", what, has_m, has_cond, d.n_in);
    if (has_m) oneOf(d.in(0), ElemType::kI64, "the trip count");
    if (has_cond) oneOf(d.in(static_cast<int>(has_m)), ElemType::kBool, "the condition");
    scalarAt(w[kLoopWordIteration], ElemType::kI64, true, "the iteration number");
    scalarAt(w[kLoopWordCondIn], ElemType::kBool, true, "the body's condition input");
    scalarAt(w[kLoopWordCondOut], ElemType::kBool, false, "the body's condition output");
    moves(3, -1);
  }

  void scan() const {
    if (w.size() < 3) bad("{}: a parameter block of {} words (the header needs 3)", what, w.size());
    if (w[1] > (1u << 30)) bad("{}: {} steps", what, w[1]);
    moves(3, w[1]);
  }
};

}  // namespace

const KindCheck kind_checks::kIf = [](const LayerCheck& c) { ControlChecks{c}.ifLayer(); };
const KindCheck kind_checks::kLoop = [](const LayerCheck& c) { ControlChecks{c}.loop(); };
const KindCheck kind_checks::kScan = [](const LayerCheck& c) { ControlChecks{c}.scan(); };

}  // namespace npuc::package
