// npuc view: the layer graph of a package (or the node graph of an ONNX model) as Graphviz .dot and as one
// self-contained HTML page (an SVG drawn here, a table, the data as JSON, no external file or script): nodes coloured by
// engine, with shapes, MACs and the estimated time (the package's PREFIX_summary.csv) and, given `npuc compare`'s
// compare.csv, each layer's SNR. The layout is computed here (layers by longest path from the inputs), so the page
// needs no Graphviz; the .dot is for `dot -Tsvg` and other Graphviz tools (the guide's `tidl_viewer -d net.dot`).
#include "cli_common.hpp"

#include "npuc/io.hpp"

#include "npuc/runtime.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace npuc::cli {

namespace fs = std::filesystem;

namespace {

struct VNode {
  std::string id, name, kind, engine, shape, value;  // value: the tensor it writes
  int64_t macs = -1;
  double time_us = -1, snr = std::nan("");
  bool io = false;  // a graph input / output marker
  int rank = 0, slot = 0;
  std::string kind_of_engine;  // a target's engine (eve, dsp, …): its kind, mac or vector, for the colour
  int group = 0;               // a package layer's layers group (0: none)
  std::string stream;          // a package layer: the descriptor stream it is in (mac or vector)
};

/// A layers group's colour (the outline of its nodes), groups 1, 2, … in turn.
const char* groupColour(int g) {
  static const char* c[] = {"#d62728", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};
  return c[static_cast<size_t>(g - 1) % (sizeof c / sizeof c[0])];
}

struct VGraph {
  std::string title, source;
  std::vector<VNode> nodes;
  std::vector<std::pair<size_t, size_t>> edges;
};

/// One CSV record's fields (RFC 4180 quotes).
std::vector<std::string> csvFields(const std::string& line) {
  std::vector<std::string> f(1);
  bool q = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (q) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') f.back() += '"', ++i;
      else if (c == '"') q = false;
      else f.back() += c;
    } else if (c == '"') {
      q = true;
    } else if (c == ',') {
      f.emplace_back();
    } else if (c != '\r') {
      f.back() += c;
    }
  }
  return f;
}

/// A CSV file as a list of column name -> value maps (empty when the file is missing).
std::vector<std::map<std::string, std::string>> readCsv(const fs::path& p) {
  std::vector<std::map<std::string, std::string>> rows;
  std::error_code ec;
  if (!fs::exists(p, ec)) return rows;
  std::istringstream in(readFileText(p, 256u << 20, "a summary CSV"));
  std::string line;
  if (!std::getline(in, line)) return rows;
  const auto head = csvFields(line);
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto f = csvFields(line);
    std::map<std::string, std::string> r;
    for (size_t i = 0; i < head.size() && i < f.size(); ++i) r[head[i]] = f[i];
    rows.push_back(std::move(r));
  }
  return rows;
}

/// A finite number of a CSV field ("inf" for an SNR: +infinity), else `fallback`.
double number(const std::string& s, double fallback) {
  if (s.empty()) return fallback;
  if (s == "inf") return INFINITY;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  return end && *end == '\0' && std::isfinite(v) ? v : fallback;
}

/// The name of a path as the user means it ("output/net/" and "." included).
std::string nameOf(const fs::path& p) {
  fs::path a = fs::absolute(p).lexically_normal();
  if (a.filename().empty()) a = a.parent_path();
  return a.filename().string();
}

/// Builds a VGraph: nodes in order, an edge from the latest writer of each value a node reads.
struct GraphBuilder {
  VGraph g;
  std::map<std::string, size_t> writer;  // value -> node

  template <class T> void inputs(const std::vector<T>& ins) {
    for (auto& in : ins) add(io("in_", in.name, "input", shapeStr(in.shape)), {}, {in.name});
  }
  template <class T> void outputs(const std::vector<T>& outs) {
    for (auto& out : outs) add(io("out_", out.name, "output", shapeStr(out.shape)), {out.name}, {});
  }
  void add(VNode n, const std::vector<std::string>& reads, const std::vector<std::string>& writes) {
    const size_t id = g.nodes.size();
    std::set<size_t> from;
    for (auto& v : reads)
      if (auto w = writer.find(v); !v.empty() && w != writer.end() && from.insert(w->second).second) g.edges.push_back({w->second, id});
    for (auto& v : writes)
      if (!v.empty()) writer[v] = id;
    g.nodes.push_back(std::move(n));
  }
  /// A graph input / output marker.
  VNode io(const char* prefix, const std::string& name, const char* kind, const std::string& shape) const {
    VNode n;
    n.id = prefix + std::to_string(g.nodes.size());
    n.name = n.value = name;
    n.kind = kind;
    n.engine = "io";
    n.shape = shape;
    n.io = true;
    return n;
  }
};

VGraph fromPackage(const fs::path& dir) {
  Runtime rt(dir);
  GraphBuilder b;
  b.g.title = nameOf(dir);
  b.g.source = fmt::format("package {} (target {}, {} numerics, {} layers)", dir.string(), rt.target(), rt.numerics(), rt.layers().size());
  b.inputs(rt.inputs());
  // The estimate of each layer: PREFIX_summary.csv (by layer name), written beside the package by translate.
  std::map<std::string, std::map<std::string, std::string>> summary;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f.size() > 12 && f.compare(f.size() - 12, 12, "_summary.csv") == 0)
      for (auto& r : readCsv(e.path())) summary[r["name"]] = r;
  }
  // The target's engines and their kinds. A layer is shown on the engine that runs it on the target: its layers
  // group's where the target's core sets give groups engines (TIDL: group 1 on the EVE, 2 on the DSP), else the one
  // the estimate placed it on (the summary's `engine`), else — a layer the estimate does not time, as a quantize
  // layer — the descriptor stream it is in. The stream need not be of that engine's kind (an addition is a
  // vector-stream layer; TIDL runs it on the EVE).
  std::map<std::string, std::string> kinds;
  std::vector<std::string> group_engines;
  try {
    const TargetInfo ti = targetInfo(rt.target());
    for (auto& [name, kind] : ti.engines) kinds[name] = kind;
    group_engines = ti.group_engines;
  } catch (const Error&) {  // (a package of a target that is not here: its streams only)
  }
  for (auto& l : rt.layers()) {
    VNode n{"l" + std::to_string(l.seq), l.name, l.kind, l.engine, shapeStr(l.output.shape), l.output.name, -1, -1, std::nan(""), false, 0, 0, {}, 0, {}};
    n.stream = l.engine;
    n.group = l.group;
    if (auto it = summary.find(l.name); it != summary.end()) {
      const double macs = number(it->second["MACs"], -1);
      n.macs = macs >= 0 && macs < 9e18 ? static_cast<int64_t>(macs) : -1;
      n.time_us = number(it->second["time[us]"], -1);
      if (auto k = kinds.find(it->second["engine"]); k != kinds.end()) {
        n.engine = k->first;
        n.kind_of_engine = k->second;
      }
    }
    if (n.group > 0 && static_cast<size_t>(n.group) <= group_engines.size()) {
      n.engine = group_engines[static_cast<size_t>(n.group) - 1];
      n.kind_of_engine = kinds.count(n.engine) ? kinds[n.engine] : std::string();
    }
    std::vector<std::string> writes = {l.output.name};
    for (auto& o : l.more_outputs) writes.push_back(o.name);  // (a custom layer of several outputs)
    b.add(std::move(n), l.inputs, writes);
  }
  b.outputs(rt.outputs());
  return b.g;
}

/// An ONNX model's node graph; with a target, the model as translate optimizes it, each node on the engine the
/// target puts it (coloured by the engine's kind) with its estimated time — a target without packages (tidl) too.
VGraph fromModel(const fs::path& onnx, const std::string& target) {
  LoadOptions lo;
  lo.require_static_inputs = !target.empty();  // (open dimensions print as -1; an estimate needs them all)
  Model m = Model::load(onnx, lo);
  std::vector<Model::NodeEstimate> est;  // by position: the nodes in graph order
  if (!target.empty()) {
    m = std::move(m).optimized();
    est = m.estimate(target);
  }
  GraphBuilder b;
  b.g.title = onnx.stem().string();
  const char* format = modelFormatName(detectModelFormat(onnx));  // (ONNX, TensorFlow, TensorFlow Lite)
  b.g.source = target.empty()
                   ? fmt::format("{} model {} (optimized as loaded, {} nodes; colour by op kind: MAC-type ops and the rest)",
                                 format, onnx.string(), m.nodes().size())
                   : fmt::format("{} model {} optimized for target {} ({} nodes; colour by the kind of the engine each runs on, "
                                 "time from the cost model)", format, onnx.string(), target, m.nodes().size());
  b.inputs(m.inputs());
  for (auto& ni : m.nodes()) {
    const bool mac = ni.op == "Conv" || ni.op == "ConvTranspose" || ni.op == "Gemm" || ni.op == "MatMul" || ni.op.find("ai.npuc.Conv") == 0 ||
                     ni.op.find("ai.npuc.Gemm") == 0 || ni.op.find("ai.npuc.QConv") == 0;
    std::string engine = mac ? "mac" : "vector";
    double time_us = -1;
    const Model::NodeEstimate* ne = static_cast<size_t>(ni.index) < est.size() ? &est[static_cast<size_t>(ni.index)] : nullptr;
    if (ne) {
      engine = ne->engine;
      time_us = ne->time_us;
    }
    VNode v{"n" + std::to_string(ni.index), ni.name, ni.op, engine,
            ni.output_shapes.empty() ? std::string() : shapeStr(ni.output_shapes[0]), ni.outputs.empty() ? std::string() : ni.outputs[0],
            ni.macs, -1, std::nan(""), false, 0, 0, {}, 0, {}};
    v.time_us = time_us;
    if (ne) v.kind_of_engine = ne->engine_kind;
    b.add(v, ni.inputs, ni.outputs);
  }
  b.outputs(m.outputs());
  return b.g;
}

/// compare.csv's SNR per layer (by layer name).
void addSnr(VGraph& g, const fs::path& csv) {
  auto rows = readCsv(csv);
  if (rows.empty()) throw Error(ErrorCode::kInvalidArgument, fmt::format("--compare {}: no rows (a compare.csv of npuc compare)", csv.string()));
  std::map<std::string, double> snr;
  for (auto& r : rows)
    if (r["matched"] == "1") snr[r["layer"]] = number(r["snr_db"], std::nan(""));
  for (auto& n : g.nodes)
    if (auto it = snr.find(n.name); it != snr.end()) n.snr = it->second;
}

/// Ranks by longest path from the sources (node order is topological), slots in order within a rank.
void layout(VGraph& g) {
  std::vector<std::vector<size_t>> preds(g.nodes.size());
  for (auto [a, b] : g.edges) preds[b].push_back(a);
  std::map<int, int> used;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    int r = 0;
    for (size_t p : preds[i]) r = std::max(r, g.nodes[p].rank + 1);
    g.nodes[i].rank = r;
    g.nodes[i].slot = used[r]++;
  }
}

std::string dotEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c == '\n' ? ' ' : c;
  }
  return o;
}

const char* colour(const std::string& engine) {
  if (engine == "mac") return "#9ecae1";
  if (engine == "vector") return "#a1d99b";
  if (engine == "io") return "#eeeeee";
  return "#fdae6b";
}

/// A node's fill: the colour of its engine's kind (a target's engine), else of its engine (mac, vector, io).
const char* fill(const VNode& n) { return colour(n.kind_of_engine.empty() ? n.engine : n.kind_of_engine); }

std::string timeStr(double us) { return us >= 0 ? fmt::format("{:.3f} us", us) : std::string(); }
std::string snrLabel(double s) { return std::isnan(s) ? std::string() : std::isinf(s) ? std::string("inf dB") : fmt::format("{:.1f} dB", s); }

/// The layer table on stdout (tidl_viewer -p): one line per layer, inputs and outputs left out.
void printLayers(const VGraph& g) {
  fmt::print("{:>4}  {:<40} {:<18} {:<8} {:>5}  {:<18} {:>12} {:>12}\n", "#", "layer", "kind", "engine", "group", "output",
             "MACs", "time [us]");
  int i = 0;
  for (const VNode& n : g.nodes) {
    if (n.io) continue;
    fmt::print("{:>4}  {:<40} {:<18} {:<8} {:>5}  {:<18} {:>12} {:>12}\n", i++, n.name, n.kind, n.engine,
               n.group ? std::to_string(n.group) : "-", n.shape, n.macs >= 0 ? std::to_string(n.macs) : "-",
               n.time_us >= 0 ? fmt::format("{:.3f}", n.time_us) : "-");
  }
}

std::string dot(const VGraph& g) {
  std::string s = fmt::format("// npuc view: {}\ndigraph \"{}\" {{\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fontname=\"sans-serif\", fontsize=10];\n",
                              dotEscape(g.source), dotEscape(g.title));
  for (auto& n : g.nodes) {
    std::string label = n.io ? fmt::format("{}\\n{}", dotEscape(n.name), n.shape)
                             : fmt::format("{}\\n{} ({})\\n{}", dotEscape(n.name), dotEscape(n.kind), dotEscape(n.engine), n.shape);
    if (n.group > 0) label += fmt::format("\\ngroup {}", n.group);
    if (n.macs > 0) label += fmt::format("\\n{} MACs", n.macs);
    if (n.time_us >= 0) label += "\\n" + timeStr(n.time_us);
    if (!std::isnan(n.snr)) label += "\\nSNR " + snrLabel(n.snr);
    s += fmt::format("  {} [label=\"{}\", fillcolor=\"{}\"{}{}];\n", n.id, label, fill(n),
                     n.io ? ", shape=ellipse" : "", n.group > 0 ? fmt::format(", color=\"{}\", penwidth=2", groupColour(n.group)) : "");
  }
  // A package's layers groups: one cluster each (the pipeline stages).
  std::map<int, std::vector<std::string>> groups;
  for (auto& n : g.nodes)
    if (n.group > 0) groups[n.group].push_back(n.id);
  for (auto& [gr, ids] : groups)
    s += fmt::format("  subgraph cluster_group{} {{ label=\"group {}\"; color=\"{}\"; {}; }}\n", gr, gr, groupColour(gr), fmt::join(ids, "; "));
  for (auto [a, b] : g.edges) s += fmt::format("  {} -> {};\n", g.nodes[a].id, g.nodes[b].id);
  return s + "}\n";
}

std::string jsonStr(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += static_cast<char>(c);
    else if (c < 0x20) o += fmt::format("\\u{:04x}", c);
    else if (c == '<') o += "\\u003c";  // (inside <script>)
    else o += static_cast<char>(c);
  }
  return o + "\"";
}

std::string graphPage(const VGraph& g) {
  const double W = 230, H = 58, DX = 250, DY = 88, M = 20;
  int ranks = 0, slots = 0;
  for (auto& n : g.nodes) ranks = std::max(ranks, n.rank + 1), slots = std::max(slots, n.slot + 1);
  const double width = M * 2 + slots * DX + 24, height = M * 2 + ranks * DY;  // (+24: room for the side edges)
  auto x = [&](const VNode& n) { return M + n.slot * DX; };
  auto y = [&](const VNode& n) { return M + n.rank * DY; };
  std::string svg = fmt::format("<svg id='graph' xmlns='http://www.w3.org/2000/svg' width='{:.0f}' height='{:.0f}' "
                                "style='font:11px sans-serif'>\n<defs><marker id='arrow' viewBox='0 0 10 10' refX='10' refY='5' "
                                "markerWidth='6' markerHeight='6' orient='auto'><path d='M0,0 L10,5 L0,10 z' fill='#666'/></marker></defs>\n",
                                width, height);
  for (auto [a, b] : g.edges) {
    const VNode &p = g.nodes[a], &q = g.nodes[b];
    double x1 = x(p) + W / 2, y1 = y(p) + H, x2 = x(q) + W / 2, y2 = y(q), c1 = x1, c2 = x2, d1 = y1 + DY / 2, d2 = y2 - DY / 2;
    if (q.rank - p.rank > 1) {
      // An edge past the ranks between (a skip connection): from the right side of one box to the right side of the
      // other, bowing into the gap beside the column, so that it is not drawn under the boxes in between.
      x1 = x(p) + W, y1 = y(p) + H / 2, x2 = x(q) + W, y2 = y(q) + H / 2;
      c1 = c2 = std::max(x1, x2) + 22;
      d1 = y1, d2 = y2;
    }
    svg += fmt::format("<path d='M{:.1f},{:.1f} C{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}' fill='none' stroke='#666' "
                       "marker-end='url(#arrow)'/>\n", x1, y1, c1, d1, c2, d2, x2, y2);
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const VNode& n = g.nodes[i];
    std::string second = n.io ? n.shape : fmt::format("{} · {} · {}", n.kind, n.engine, n.shape);
    if (n.group > 0) second += fmt::format(" · g{}", n.group);
    std::string title = n.name;
    if (!n.stream.empty() && n.stream != n.engine) title += fmt::format(" (in the package's {} stream)", n.stream);
    std::string third;
    if (n.macs > 0) third += fmt::format("{} MACs ", n.macs);
    if (n.time_us >= 0) third += timeStr(n.time_us) + " ";
    if (!std::isnan(n.snr)) third += "SNR " + snrLabel(n.snr);
    const std::string nm = n.name.size() > 34 ? "…" + n.name.substr(n.name.size() - 33) : n.name;
    svg += fmt::format("<g class='node' data-i='{}'><title>{}</title><rect x='{:.0f}' y='{:.0f}' width='{:.0f}' height='{:.0f}' "
                       "rx='{}' fill='{}' stroke='{}' stroke-width='{}'/><text x='{:.0f}' y='{:.0f}'>{}</text><text x='{:.0f}' y='{:.0f}'>{}</text>"
                       "<text x='{:.0f}' y='{:.0f}'>{}</text></g>\n",
                       i, htmlEscape(title), x(n), y(n), W, H, n.io ? 20 : 6, fill(n),
                       n.group > 0 ? groupColour(n.group) : "#555", n.group > 0 ? 3 : 1, x(n) + 6, y(n) + 15, htmlEscape(nm), x(n) + 6,
                       y(n) + 31, htmlEscape(second), x(n) + 6, y(n) + 47, htmlEscape(third));
  }
  svg += "</svg>\n";
  std::string data = "[";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const VNode& n = g.nodes[i];
    data += fmt::format("{}{{\"name\":{},\"kind\":{},\"engine\":{},\"stream\":{},\"group\":{},\"shape\":{},\"io\":{},\"macs\":{},"
                        "\"time_us\":{},\"snr\":{}}}",
                        i ? ",\n" : "", jsonStr(n.name), jsonStr(n.kind), jsonStr(n.engine), jsonStr(n.stream), n.group, jsonStr(n.shape),
                        n.io ? "true" : "false",
                        n.macs, std::isfinite(n.time_us) ? fmt::format("{}", n.time_us) : std::string("-1"),
                        std::isnan(n.snr) ? std::string("null") : std::isinf(n.snr) ? std::string(n.snr > 0 ? "1e999" : "-1e999") : fmt::format("{}", n.snr));
  }
  data += "]";
  std::string rows;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const VNode& n = g.nodes[i];
    if (n.io) continue;
    rows += fmt::format("<tr id='row{}'><td>{}</td><td>{}</td><td style='background:{}'>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                        i, htmlEscape(n.name), htmlEscape(n.kind), fill(n), htmlEscape(n.engine),
                        n.group > 0 ? std::to_string(n.group) : "", n.shape, n.macs >= 0 ? std::to_string(n.macs) : "", timeStr(n.time_us), snrLabel(n.snr));
  }
  // The script reads the embedded data: the summary line and the click-to-highlight link between graph and table.
  const char* script = R"JS(
const layers = JSON.parse(document.getElementById('data').textContent).filter(n => !n.io);
const engines = {}, groups = {};
let total = 0, worst = null;
for (const n of layers) {
  engines[n.engine] = (engines[n.engine] || 0) + 1;
  if (n.group > 0) groups[n.group] = (groups[n.group] || 0) + 1;
  if (n.time_us >= 0) total += n.time_us;
  if (n.snr !== null && (worst === null || n.snr < worst.snr)) worst = n;
}
let text = layers.length + ' layers (' + Object.keys(engines).sort().map(e => e + ': ' + engines[e]).join(', ') + ')';
if (Object.keys(groups).length) text += '; layers groups ' + Object.keys(groups).map(g => g + ': ' + groups[g] + ' layers').join(', ');
if (total > 0) text += '; estimated ' + total.toFixed(3) + ' us';
if (worst) text += '; lowest SNR ' + worst.snr.toFixed(1) + ' dB at ' + worst.name;
document.getElementById('summary').textContent = text;
for (const g of document.querySelectorAll('g.node')) {
  g.addEventListener('click', () => {
    for (const r of document.querySelectorAll('tr.sel')) r.classList.remove('sel');
    const row = document.getElementById('row' + g.dataset.i);
    if (row) { row.classList.add('sel'); row.scrollIntoView(); }
  });
}
)JS";
  // The legend: the engine kinds' colours, with the target's engines of each kind shown; the groups' outlines.
  std::map<std::string, std::set<std::string>> named;  // kind -> engine names of that kind
  std::set<int> groups;
  for (auto& n : g.nodes) {
    if (!n.kind_of_engine.empty()) named[n.kind_of_engine].insert(n.engine);
    if (n.group > 0) groups.insert(n.group);
  }
  auto kindLabel = [&](const char* kind) {
    auto it = named.find(kind);
    return it == named.end() ? std::string(kind) : fmt::format("{} ({})", kind, htmlEscape(fmt::format("{}", fmt::join(it->second, ", "))));
  };
  std::string legend = fmt::format("<span style='background:{}'>{}</span><span style='background:{}'>{}</span><span style='background:{}'>"
                                   "input / output</span><span style='background:{}'>other</span>",
                                   colour("mac"), kindLabel("mac"), colour("vector"), kindLabel("vector"), colour("io"), colour("other"));
  for (int gr : groups) legend += fmt::format("<span style='border:3px solid {}'>group {}</span>", groupColour(gr), gr);
  return fmt::format(
      "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>npuc view: {}</title><style>body{{font-family:sans-serif;margin:16px}}"
      "table{{border-collapse:collapse;margin-top:12px}}td,th{{border:1px solid #ccc;padding:2px 6px;font-size:12px}}tr.sel{{outline:2px solid #d62728}}"
      "g.node{{cursor:pointer}}.legend span{{padding:2px 8px;margin-right:6px;border:1px solid #999}}</style></head><body>\n"
      "<h1>npuc view: {}</h1>\n<p>{}</p>\n<p id='summary'>(the summary needs JavaScript)</p>\n<p class='legend'>{}</p>\n"
      "<div style='overflow:auto;max-height:70vh;border:1px solid #ddd'>\n{}</div>\n<table><tr><th>layer</th><th>kind</th><th>engine</th>"
      "<th>group</th><th>shape</th><th>MACs</th><th>time</th><th>SNR</th></tr>\n{}</table>\n<script id='data' type='application/json'>{}</script>\n"
      "<script>{}</script>\n</body></html>\n",
      htmlEscape(g.title), htmlEscape(g.title), htmlEscape(g.source), legend, svg, rows, data, script);
}

}  // namespace

void addView(Command& app, Action& run) {
  auto* c = app.subcommand("view", "Draw a package's layer graph (or a model's): Graphviz .dot and a self-contained HTML page");
  addCustomOpOption(c);
  struct Opts {
    std::string target, out = ".", compare, name, on;
    bool print = false;
  };
  auto o = std::make_shared<Opts>();
  c->option("target", o->target, "A package folder (output/PREFIX), tidl-import's reference to one (outputNetFile), or a model "
                                     "(ONNX, TensorFlow .pb, TFLite; a Caffe network through inspect --save-onnx first)")->required();
  c->option("--out,-o", o->out, "Folder for NAME.dot and NAME.html (default: the current folder)");
  c->option("--name", o->name, "File name stem (default: the package's or model's name)");
  c->option("--on", o->on,
                "For an ONNX model: optimize it for this target and colour each node by the engine the target puts it "
                "on, with its estimated time (a target's engines without translating: tidl's eve and dsp too)");
  c->option("--compare", o->compare, "npuc compare's compare.csv: each layer's SNR on the graph and in the table");
  c->flag("-p,--print", o->print, "Also print the layer table on stdout (tidl_viewer -p): each layer's name, kind, engine, "
                                  "layers group, output shape, MACs and estimated time");
  c->callback([o, &run] {
    run = [o] {
      // (a package folder, or tidl-import's reference to one at outputNetFile)
      const bool package = fs::is_directory(o->target) || isPackageReference(o->target);
      if (!o->on.empty() && package)
        throw Error(ErrorCode::kInvalidArgument, "--on applies to an ONNX model; a package knows its target");
      if (!o->on.empty()) supportedOpsPage(o->on);  // an unknown target fails here, before the model is read
      VGraph g = package ? fromPackage(packageFolder(o->target, "view")) : fromModel(o->target, o->on);
      if (!o->compare.empty()) addSnr(g, o->compare);
      layout(g);
      const std::string stem = o->name.empty() ? g.title : o->name;
      checkOutputName(stem, "--name");
      makeOutputFolder(o->out, "--out");
      const fs::path base = fs::path(o->out) / stem;
      writeText(base.string() + ".dot", dot(g));
      writeText(base.string() + ".html", graphPage(g));
      if (o->print) printLayers(g);
      fmt::print("{}: {} nodes, {} edges\nwrote {}.dot and {}.html\n", g.source, g.nodes.size(), g.edges.size(), base.string(), base.string());
      return 0;
    };
  });
}

}  // namespace npuc::cli
