// Window functions, DFT, STFT and the mel filter bank (signal.hpp): sums in double, in ascending index order, each
// result rounded once to float32; the twiddle angle 2π·((k·t) mod N)/N so it stays exact for long transforms.
#include "kernels/signal.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

namespace npuc::kernels {

void window(WindowKind kind, int64_t size, bool periodic, float* out) {
  const double N = static_cast<double>(periodic ? size : size - 1);
  const double a0 = kind == WindowKind::kHann ? 0.5 : kind == WindowKind::kHamming ? 25.0 / 46.0 : 0.42;
  const double a1 = kind == WindowKind::kBlackman ? 0.5 : 1.0 - a0;
  const double a2 = kind == WindowKind::kBlackman ? 0.08 : 0.0;
  for (int64_t i = 0; i < size; ++i) {
    const double x = N > 0 ? 2.0 * std::numbers::pi * static_cast<double>(i) / N : 0.0;
    out[i] = static_cast<float>(a0 - a1 * std::cos(x) + a2 * std::cos(2.0 * x));
  }
}

namespace {

/// The twiddles of a `length`-point transform: cos and sin of the angle sign·2π·j/length for each j = (k·t) mod
/// length, computed once per transform size (each one as the definition writes it, so the table changes no bit).
struct Twiddles {
  std::vector<double> cs, sn;
  Twiddles(int64_t length, bool inverse) : cs(static_cast<size_t>(length)), sn(static_cast<size_t>(length)) {
    const double sign = inverse ? 1.0 : -1.0;
    for (int64_t j = 0; j < length; ++j) {
      const double a = sign * 2.0 * std::numbers::pi * static_cast<double>(j) / static_cast<double>(length);
      cs[static_cast<size_t>(j)] = std::cos(a);
      sn[static_cast<size_t>(j)] = std::sin(a);
    }
  }
};

/// One transform of `length` points over `count` samples (the rest zeros) read with stride `stride` (floats), c
/// components each, optionally multiplied by a window; bins written as (re, im) pairs every `out_stride` floats.
void transform(const float* x, int64_t count, int64_t stride, int c, const float* win, int64_t length, bool inverse,
               const Twiddles& tw, int64_t bins, float* y, int64_t out_stride) {
  const int64_t m = std::min(count, length);
  for (int64_t k = 0; k < bins; ++k) {
    double re = 0.0, im = 0.0;
    for (int64_t t = 0; t < m; ++t) {
      const size_t j = static_cast<size_t>((k * t) % length);
      const double w = win ? win[t] : 1.0;
      const double xr = x[t * stride] * w, xi = c == 2 ? x[t * stride + 1] * w : 0.0;
      const double cs = tw.cs[j], sn = tw.sn[j];
      re += xr * cs - xi * sn;
      im += xr * sn + xi * cs;
    }
    if (inverse) re /= static_cast<double>(length), im /= static_cast<double>(length);
    y[k * out_stride] = static_cast<float>(re);
    y[k * out_stride + 1] = static_cast<float>(im);
  }
}

}  // namespace

void dft(const float* x, int64_t outer, int64_t n, int64_t inner, int c, int64_t length, bool inverse, bool onesided,
         float* y) {
  const int64_t bins = onesided ? length / 2 + 1 : length;
  const Twiddles tw(length, inverse);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      transform(x + (o * n * inner + i) * c, n, inner * c, c, nullptr, length, inverse, tw, bins,
                y + (o * bins * inner + i) * 2, inner * 2);
}

void stft(const float* signal, int64_t batch, int64_t samples, int c, int64_t frame_step, const float* window,
          int64_t frame_length, bool onesided, float* y) {
  const int64_t frames = (samples - frame_length) / frame_step + 1, bins = onesided ? frame_length / 2 + 1 : frame_length;
  const Twiddles tw(frame_length, false);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f)
      transform(signal + (b * samples + f * frame_step) * c, frame_length, c, c, window, frame_length, false, tw, bins,
                y + (b * frames + f) * bins * 2, 2);
}

void melWeightMatrix(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate, double lower_hz, double upper_hz,
                     float* out) {
  const int64_t spec_bins = dft_length / 2 + 1;
  auto mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double lo = mel(lower_hz), hi = mel(upper_hz);
  const double step = (hi - lo) / static_cast<double>(num_mel_bins + 2);
  std::vector<int64_t> edge(static_cast<size_t>(num_mel_bins + 2));
  for (int64_t i = 0; i < num_mel_bins + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + lo) / 2595.0) - 1.0);
    const double bin = std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate));
    if (!(bin >= 0 && bin < static_cast<double>(spec_bins)))
      fail(ErrorCode::kInvalidInput, "MelWeightMatrix: band edge {} ({:.6g} Hz) falls in DFT bin {}, outside the "
                                     "spectrogram's {} bins", i, hz, bin, spec_bins);
    edge[static_cast<size_t>(i)] = static_cast<int64_t>(bin);
  }
  std::fill_n(out, spec_bins * num_mel_bins, 0.0f);
  for (int64_t i = 0; i < num_mel_bins; ++i) {
    const int64_t l = edge[static_cast<size_t>(i)], ctr = edge[static_cast<size_t>(i + 1)], r = edge[static_cast<size_t>(i + 2)];
    if (ctr == l)
      out[ctr * num_mel_bins + i] = 1.0f;
    else
      for (int64_t j = l; j <= ctr; ++j)
        out[j * num_mel_bins + i] = static_cast<float>(static_cast<double>(j - l) / static_cast<double>(ctr - l));
    if (r > ctr)
      for (int64_t j = ctr; j < r; ++j)
        out[j * num_mel_bins + i] = static_cast<float>(static_cast<double>(r - j) / static_cast<double>(r - ctr));
  }
}

}  // namespace npuc::kernels
