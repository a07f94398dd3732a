// Engine kernels of the signal-processing ops (windows, DFT, STFT, MelWeightMatrix): the sizes from the node's inputs
// (checked by the shape functions, which gave the output shapes), the arithmetic by the reference kernels
// (src/kernels/ref/signal_ref.cpp).
#include "engine/kernel.hpp"
#include "kernels/signal.hpp"

namespace npuc::engine {

namespace {

int64_t scalarOf(const KernelCall& c, int i) { return c.input(i).toInt64()[0]; }

void windowKernel(KernelCall& c, kernels::WindowKind kind) {
  Tensor& y = c.alloc(0);
  kernels::window(kind, y.dim(0), c.node.attrInt("periodic", 1) != 0, y.data<float>());
}

void dftKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  const Shape& s = x.shape();
  int64_t axis = c.node.attrInt("axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d + 1 < s.size(); ++d) inner *= s[d];
  const int64_t n = s[static_cast<size_t>(axis)];
  const int64_t length = c.has(1) ? scalarOf(c, 1) : n;
  Tensor& y = c.alloc(0);
  kernels::dft(x.data<float>(), outer, n, inner, static_cast<int>(s.back()), length, c.node.attrInt("inverse", 0) != 0,
               c.node.attrInt("onesided", 0) != 0, y.data<float>());
}

void stftKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  const float* win = c.has(2) ? c.input(2).data<float>() : nullptr;
  const int64_t length = c.has(2) ? c.input(2).dim(0) : scalarOf(c, 3);
  Tensor& y = c.alloc(0);
  kernels::stft(x.data<float>(), x.dim(0), x.dim(1), static_cast<int>(x.dim(2)), scalarOf(c, 1), win, length,
                c.node.attrInt("onesided", 1) != 0, y.data<float>());
}

void melKernel(KernelCall& c) {
  Tensor& y = c.alloc(0);
  kernels::melWeightMatrix(scalarOf(c, 0), scalarOf(c, 1), scalarOf(c, 2), c.input(3).toDouble()[0],
                           c.input(4).toDouble()[0], y.data<float>());
}

}  // namespace

void registerSignalKernels(KernelRegistry& r) {
  r.addFn("HannWindow", [](KernelCall& c) { windowKernel(c, kernels::WindowKind::kHann); });
  r.addFn("HammingWindow", [](KernelCall& c) { windowKernel(c, kernels::WindowKind::kHamming); });
  r.addFn("BlackmanWindow", [](KernelCall& c) { windowKernel(c, kernels::WindowKind::kBlackman); });
  r.addFn("DFT", dftKernel);
  r.addFn("STFT", stftKernel);
  r.addFn("MelWeightMatrix", melKernel);
}

}  // namespace npuc::engine
