// run_package_cpp: the same as main.c through the C++ runtime API (npuc/runtime.hpp), with every input filled
// with a constant.   run_package_cpp PACKAGE_DIR [FILL]
#include <npuc/runtime.hpp>

#include <cstdlib>
#include <iostream>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: run_package_cpp PACKAGE_DIR [FILL]\n";
    return 2;
  }
  const float fill = argc > 2 ? std::strtof(argv[2], nullptr) : 0.5f;
  try {
    npuc::Runtime rt(argv[1], {.threads = 1});
    std::cout << "package " << argv[1] << ": target " << rt.target() << ", numerics " << rt.numerics() << ", "
              << rt.contentHash() << "\n";
    for (const auto& in : rt.inputs()) {
      npuc::Tensor x(npuc::DType::kF32, in.shape);
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = fill;
      rt.setInput(in.name, x);
    }
    int layers = 0;
    rt.run([&](const npuc::RuntimeLayer&, const npuc::Tensor&) { ++layers; });
    std::cout << "ran " << layers << " layers\n";
    for (const auto& out : rt.outputs()) {
      npuc::Tensor y = rt.outputFloat(out.name);
      std::cout << "output " << out.name << ": " << npuc::dtypeName(out.dtype) << " [" << npuc::shapeStr(y.shape())
                << "]:";
      for (int64_t i = 0; i < y.numel() && i < 10; ++i) std::cout << " " << y.data<float>()[i];
      std::cout << (y.numel() > 10 ? " ...\n" : "\n");
    }
  } catch (const npuc::Error& e) {
    std::cerr << "run_package_cpp: " << npuc::errorCodeName(e.code()) << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
