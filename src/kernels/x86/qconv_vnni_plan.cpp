// The AVX-512 VNNI int8 convolution's plan (kernels/x86/qconv_vnni.hpp): the weights packed once per layer. Built for
// the baseline instruction set: packing is plain C++ whose containers' members must not come from a file built for
// AVX-512 (scripts/check_isa_symbols.sh); the kernels that read the plan are in qconv_vnni.cpp and qconv_amx.cpp.
#include "kernels/x86/qconv_vnni.hpp"

#include <algorithm>
#include <vector>

namespace npuc::kernels::detail {

QConvVnniPlan planQConvVnni(const ConvShape& s, const int8_t* w, const int32_t* bias, int32_t zx, const QOutput& out,
                            bool amx) {
  QConvVnniPlan p;
  p.shape = s;
  p.zx = zx;
  p.out = out;
  const int64_t M = s.out_channels, cg = s.in_channels / s.groups, K = cg * s.kernel[0] * s.kernel[1];
  p.k4 = (K + 3) / 4;
  p.hp = std::max<int64_t>((s.out_spatial[0] - 1) * s.stride[0] + (s.kernel[0] - 1) * s.dilation[0] + 1, 1);
  p.wp = std::max<int64_t>((s.out_spatial[1] - 1) * s.stride[1] + (s.kernel[1] - 1) * s.dilation[1] + 1, 1);
  const int64_t KH = s.kernel[0], KW = s.kernel[1];
  p.depthwise = s.groups == s.in_channels && s.groups == M && s.dilation[0] == 1 && s.dilation[1] == 1 &&
                (s.stride[1] == 1 || s.stride[1] == 2);
  p.qw = (KW + 3) / 4;
  if (!p.depthwise) {
    p.direct = s.pad_begin[0] == 0 && s.pad_begin[1] == 0 && p.hp <= s.in_spatial[0] && p.wp <= s.in_spatial[1];
    // (offset planes keep 64 bytes of slack each: offsetPlane's last store may run past its plane, and planes are
    // built in parallel)
    p.rs = p.direct ? s.in_spatial[1] : p.wp;
    p.ps = p.direct ? s.in_spatial[0] * s.in_spatial[1] : p.hp * p.wp + 64;
    p.tap_off.resize(static_cast<size_t>(4 * p.k4));
    for (int64_t i = 0; i < 4 * p.k4; ++i) {
      // (the last quad of a K not divisible by 4 repeats its first row past K: those bytes meet zero weights)
      const int64_t k = i < K ? i : i / 4 * 4;
      const int64_t cl = k / (KH * KW), kh = k / KW % KH, kw = k % KW;
      p.tap_off[static_cast<size_t>(i)] = cl * p.ps + kh * s.dilation[0] * p.rs + kw * s.dilation[1];
    }
  }
  const int64_t per = p.depthwise ? KH * p.qw : p.k4;  // int32 words per output channel
  p.a4.assign(static_cast<size_t>(M * per), 0);
  p.bias.resize(static_cast<size_t>(M));
  p.rq.resize(static_cast<size_t>(M));
  for (int64_t m = 0; m < M; ++m) {
    int64_t sum = 0;
    auto* a = reinterpret_cast<uint8_t*>(p.a4.data() + m * per);
    for (int64_t k = 0; k < K; ++k) {
      const int8_t v = w[m * K + k];
      // (depthwise: row kh's taps start at quad kh * qw)
      a[p.depthwise ? (k / KW) * p.qw * 4 + k % KW : k] = static_cast<uint8_t>(v);
      sum += v;
    }
    // (wraps modulo 2^32 like the sums it corrects; the true total is in range)
    const uint32_t corr = static_cast<uint32_t>(bias != nullptr ? bias[m] : 0) -
                          static_cast<uint32_t>((static_cast<int64_t>(zx) + 128) * sum);
    p.bias[static_cast<size_t>(m)] = static_cast<int32_t>(corr);
    const Multiplier mm = out.of(m);
    p.rq[static_cast<size_t>(m)] = {mm, requantOnce(mm.m, std::max(-mm.shift, 0))};
  }
  p.gemv = !p.depthwise && s.groups == 1 && s.out_spatial[0] * s.out_spatial[1] == 1;
  // (AMX only where the sums are long: below ~144 taps a tile block is dominated by storing its sums and
  // requantizing them from memory, and the VNNI microkernel, which requantizes in registers, measured as fast or
  // faster — MobileNetV2's 1x1 96 -> 576 at 14x14 0.064 ms VNNI, 0.071 AMX; ResNet-50's 1x1 256 -> 64 at 56x56
  // 0.242 VNNI, 0.145 AMX)
  p.amx = amx && !p.depthwise && !p.gemv && !qconvVnniByGroup(s) && p.k4 >= kQConvAmxMinQuads;
  if (p.amx) {  // (the tiles read a16 only: a4 is dropped)
    p.k16 = (p.k4 + 15) / 16 * 16;
    p.a16.assign(static_cast<size_t>((M + 32) * p.k16), 0);
    for (int64_t m = 0; m < M; ++m) std::copy_n(p.a4.data() + m * p.k4, p.k4, p.a16.data() + m * p.k16);
    std::vector<int32_t>().swap(p.a4);
  }
  if (p.depthwise) {  // the bytes of block b's load for window quad q that lie inside an input row (every row's)
    // (the depthwise form's vectors per output row: qconv_vnni.cpp, DwGeometry: one for rows of at most 8 outputs)
    const int64_t QW = p.qw, blocks = s.out_spatial[1] <= 8 ? 1 : (s.out_spatial[1] + 15) / 16;
    const int64_t SW = s.stride[1], PL = s.pad_begin[1], W = s.in_spatial[1];
    p.dw_masks.assign(static_cast<size_t>(QW * blocks), 0);
    for (int64_t q = 0; q < QW; ++q)
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t at = 16 * b * SW - PL + 4 * q;
        for (int64_t j = 0; j < 64; ++j)
          if (at + j >= 0 && at + j < W) p.dw_masks[static_cast<size_t>(q * blocks + b)] |= uint64_t{1} << j;
      }
  }
  if (p.gemv) {
    const int64_t blocks = (M + 15) / 16;
    p.w16.assign(static_cast<size_t>(blocks * p.k4 * 16), 0);
    p.lanes.assign(static_cast<size_t>(blocks), {});
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t k = 0; k < p.k4; ++k)
        p.w16[static_cast<size_t>(((m / 16) * p.k4 + k) * 16 + m % 16)] = p.a4[static_cast<size_t>(m * p.k4 + k)];
      const ChannelRequant& rq = p.rq[static_cast<size_t>(m)];
      QConvVnniPlan::LaneRequant& c = p.lanes[static_cast<size_t>(m / 16)];
      const int64_t i = m % 16;
      c.scalar |= rq.mul.shift > 0;
      c.m[i] = rq.once.m;
      c.pos[i % 2][i / 2] = rq.once.add_pos;
      c.neg[i % 2][i / 2] = rq.once.add_neg;
      c.shift[i % 2][i / 2] = rq.once.shift;
    }
  }
  return p;
}

}  // namespace npuc::kernels::detail
