// Signal processing: ONNX's window functions, DFT, STFT and MelWeightMatrix (opset 17). IR-free reference kernels,
// computed in double and rounded once to float32 (docs/numerics.md, "Signal processing").
#pragma once

#include <cstdint>

namespace npuc::kernels {

enum class WindowKind : uint8_t { kHann, kHamming, kBlackman };
/// w[n] = a0 − a1·cos(2πn/N) (+ a2·cos(4πn/N) for Blackman), N = size (periodic) or size − 1 (symmetric).
void window(WindowKind kind, int64_t size, bool periodic, float* out);

/// The DFT along the middle axis of x [outer, n, inner, c] (c = 1: real, 2: complex), zero-padded or truncated to
/// `length` points: y [outer, bins, inner, 2], bins = length, or length / 2 + 1 when onesided. inverse: e^{+2πikt/N}
/// and the sum divided by N.
void dft(const float* x, int64_t outer, int64_t n, int64_t inner, int c, int64_t length, bool inverse, bool onesided,
         float* y);

/// Short-time Fourier transform of signal [batch, samples, c]: frames of frame_length samples every frame_step,
/// each multiplied by `window` (null: all ones) and transformed: y [batch, frames, bins, 2], frames =
/// (samples − frame_length) / frame_step + 1, bins = frame_length (/ 2 + 1 when onesided).
void stft(const float* signal, int64_t batch, int64_t samples, int c, int64_t frame_step, const float* window,
          int64_t frame_length, bool onesided, float* y);

/// The triangular mel filter bank, [dft_length / 2 + 1, num_mel_bins], as ONNX's definition computes it (band edges
/// at equal steps of mel(f) = 2595·log10(1 + f/700), mapped to DFT bins by floor((dft_length + 1)·f / sample_rate)).
/// Throws kInvalidInput when a band edge falls outside the spectrogram's bins.
void melWeightMatrix(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate, double lower_hz, double upper_hz,
                     float* out);

}  // namespace npuc::kernels
