// npuc eval: top-1 accuracy of a classifier over a labelled set (batched, reference engine).
#include "cli_common.hpp"

#include <fmt/format.h>

#include <cstring>

namespace npuc::cli {

void addEval(CLI::App& app, Action& run) {
  auto* c = app.add_subcommand("eval", "Top-1 accuracy of a classifier model over a labelled .npy data set");
  struct Opts {
    std::string model, input, labels;
    int threads = 1;
    int64_t batch = 32;
  };
  auto o = std::make_shared<Opts>();
  c->add_option("model", o->model, "ONNX model")->required();
  c->add_option("--input", o->input, "Samples: name=file.npy, first dim = sample")->required();
  c->add_option("--labels", o->labels, "Integer class labels .npy, one per sample")->required();
  c->add_option("--batch", o->batch, "Samples per inference")->check(CLI::Range(1, 65536));
  c->add_option("--threads,-t", o->threads, "Worker threads")->check(CLI::Range(1, 256));
  c->callback([o, &run] {
    run = [o] {
      auto inputs = parseInputs({o->input});
      auto& [name, x] = *inputs.begin();
      Tensor y = readNpyFile(o->labels);
      auto labels = y.toInt64();
      if (x.rank() < 1 || x.dim(0) != static_cast<int64_t>(labels.size()))
        throw Error(ErrorCode::kInvalidInput, fmt::format("{} samples but {} labels", x.rank() ? x.dim(0) : 0, labels.size()));
      int64_t n = x.dim(0), b = std::min<int64_t>(o->batch, n);
      Shape bs = x.shape();
      bs[0] = b;
      LoadOptions lo;
      lo.input_shapes[name] = bs;
      Model m = Model::load(o->model, lo);
      Session s(m, o->threads);
      size_t sample_bytes = x.nbytes() / static_cast<size_t>(n);
      int64_t correct = 0;
      double t0 = nowMs();
      for (int64_t start = 0; start < n; start += b) {
        int64_t cnt = std::min(b, n - start);
        Tensor batch(x.dtype(), bs);  // a short last batch is zero-padded
        std::memcpy(batch.raw(), static_cast<const uint8_t*>(x.raw()) + static_cast<size_t>(start) * sample_bytes,
                    static_cast<size_t>(cnt) * sample_bytes);
        Tensor logits = s.run({{name, batch}})[0];
        if (logits.dtype() != DType::kF32 || logits.rank() != 2)
          throw Error(ErrorCode::kInvalidInput, "eval needs a model whose first output is float32 [batch, classes]");
        int64_t classes = logits.dim(1);
        for (int64_t i = 0; i < cnt; ++i) {
          const float* row = logits.data<float>() + i * classes;
          int64_t arg = 0;
          for (int64_t k = 1; k < classes; ++k)
            if (row[k] > row[arg]) arg = k;
          correct += arg == labels[static_cast<size_t>(start + i)];
        }
      }
      double t1 = nowMs();
      fmt::print("samples: {}\ncorrect: {}\naccuracy: {:.2f}%\ntime: {:.1f} ms ({:.3f} ms/sample)\n", n, correct,
                 100.0 * static_cast<double>(correct) / static_cast<double>(n), t1 - t0, (t1 - t0) / static_cast<double>(n));
      return 0;
    };
  });
}

}  // namespace npuc::cli
