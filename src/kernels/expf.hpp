// npuc's float32 exponential, the numerics of Softmax (docs/numerics.md, "Element-wise ops"): defined by the double
// operations below, so a vector form that performs the same IEEE operations lane by lane (kernels/x86/
// softmax_avx512.cpp) gives the same bits. With x in [-150, 89]:
//   k = nearbyint(x / ln 2),  r = (x - k ln2_hi) - k ln2_lo   (|r| <= 0.35; ln2_hi has trailing zeros: k ln2_hi exact)
//   p = the degree-12 Taylor polynomial of e^r by Horner's rule (truncation below 2^-52 of the result)
//   y = float(p * 2^k)                                            (one rounding to float; denormals included)
// — the exact e^x to about 1e-16 relative before the rounding, so y is the correctly rounded float except where e^x
// lies within ~1e-16 of a midpoint. Below -150: 0; above 89: +inf; NaN: x itself. Double operations only (the build
// does not contract a * b + c into an FMA: -ffp-contract=off).
#pragma once

#include <cfloat>
#include <cmath>
#include <limits>

namespace npuc::kernels {

namespace expf_detail {
inline constexpr double kInvLn2 = 0x1.71547652b82fep+0;
inline constexpr double kLn2Hi = 0x1.62e42fefa3800p-1;  // ln 2 to 42 bits: k * kLn2Hi is exact for |k| < 2^11
inline constexpr double kLn2Lo = 0x1.ef35793c76730p-45;  // ln 2 - kLn2Hi
inline constexpr double kLow = -150.0, kHigh = 89.0;
/// 1 / n!, n = 12 down to 0 (the Horner order).
inline constexpr double kCoef[13] = {0x1.1eed8eff8d898p-29, 0x1.ae64567f544e4p-26, 0x1.27e4fb7789f5cp-22, 0x1.71de3a556c734p-19,
                                     0x1.a01a01a01a01ap-16, 0x1.a01a01a01a01ap-13, 0x1.6c16c16c16c17p-10, 0x1.1111111111111p-7,
                                     0x1.5555555555555p-5,  0x1.5555555555555p-3,  0x1.0000000000000p-1,  0x1.0000000000000p+0,
                                     0x1.0000000000000p+0};
/// The smallest double that rounds to +inf as a float (FLT_MAX plus half its ulp: the tie goes to the even +inf).
inline constexpr double kFloatOverflow = 0x1.ffffffp127;
/// 1 / n!, n = 13 down to 1 (expm1D's Horner order).
inline constexpr double kExpm1Coef[13] = {0x1.6124613a86d09p-33, 0x1.1eed8eff8d898p-29, 0x1.ae64567f544e4p-26,
                                          0x1.27e4fb7789f5cp-22, 0x1.71de3a556c734p-19, 0x1.a01a01a01a01ap-16,
                                          0x1.a01a01a01a01ap-13, 0x1.6c16c16c16c17p-10, 0x1.1111111111111p-7,
                                          0x1.5555555555555p-5,  0x1.5555555555555p-3,  0x1.0000000000000p-1,
                                          0x1.0000000000000p+0};
/// Sigmoid is 1 (0) as a float above kSigmoidHigh (below kSigmoidLow); Tanh is ±1 beyond ±kTanhHigh.
inline constexpr float kSigmoidHigh = 40.0f, kSigmoidLow = -110.0f, kTanhHigh = 10.0f;
}  // namespace expf_detail

/// e^t − 1 in double for |t| <= 160 (npuc's Sigmoid and Tanh below): expF32's reduction k = nearbyint(t / ln 2),
/// r = (t − k ln2_hi) − k ln2_lo; q = r + r²/2! + … + r^13/13! by Horner's rule (p = 1/13!, p = p·r + 1/n! down to
/// n = 1, q = p·r); then (2^k − 1) + 2^k·q, which is q itself when k = 0 (no cancellation near 0). About 1e-16
/// relative. Double operations only, so a vector form doing the same operations lane by lane gives the same bits.
static inline double expm1D(double t) {
  using namespace expf_detail;
  const double k = std::nearbyint(t * kInvLn2);
  const double r = (t - k * kLn2Hi) - k * kLn2Lo;
  double p = kExpm1Coef[0];
  for (int i = 1; i < 13; ++i) p = p * r + kExpm1Coef[i];
  const double q = p * r, s = std::ldexp(1.0, static_cast<int>(k));
  return (s - 1.0) + s * q;
}

/// npuc's Sigmoid (docs/numerics.md): float(1 / (2 + expm1D(−x))); 1 above 40, 0 below −110 (where the float
/// result is that anyway), NaN itself.
static inline float sigmoidF32(float x) {
  using namespace expf_detail;
  if (std::isnan(x)) return x;
  if (x > kSigmoidHigh) return 1.0f;
  if (x < kSigmoidLow) return 0.0f;
  return static_cast<float>(1.0 / (2.0 + expm1D(-static_cast<double>(x))));
}

/// npuc's Tanh: with e = expm1D(2x), float(e / (e + 2)); ±1 beyond ±10 (the float result there), NaN and ±0 themselves.
static inline float tanhF32(float x) {
  using namespace expf_detail;
  if (std::isnan(x) || x == 0.0f) return x;
  if (x > kTanhHigh) return 1.0f;
  if (x < -kTanhHigh) return -1.0f;
  const double e = expm1D(2.0 * static_cast<double>(x));
  return static_cast<float>(e / (e + 2.0));
}

/// (static: each translation unit keeps its own copy, so the copy of a file built for AVX-512 can never stand in for
/// a baseline caller's)
static inline float expF32(float x) {
  using namespace expf_detail;
  if (std::isnan(x)) return x;
  const double t = x;
  if (t < kLow) return 0.0f;
  if (t > kHigh) return std::numeric_limits<float>::infinity();
  const double k = std::nearbyint(t * kInvLn2);
  const double r = (t - k * kLn2Hi) - k * kLn2Lo;
  double p = kCoef[0];
  for (int i = 1; i < 13; ++i) p = p * r + kCoef[i];
  const double d = std::ldexp(p, static_cast<int>(k));
  if (d > static_cast<double>(FLT_MAX)) return d >= kFloatOverflow ? std::numeric_limits<float>::infinity() : FLT_MAX;
  return static_cast<float>(d);
}

}  // namespace npuc::kernels
