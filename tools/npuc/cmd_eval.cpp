// npuc eval: top-1 accuracy of a classifier over a labelled set: an ONNX model on the reference engine (batched),
// or an object package on the simulator (one inference per sample batch of the package's input shape).
#include "cli_common.hpp"

#include "npuc/runtime.hpp"

#include <fmt/format.h>

#include <cstring>

namespace npuc::cli {

void addEval(Command& app, Action& run) {
  auto* c = app.subcommand("eval", "Top-1 accuracy of a classifier model over a labelled .npy data set");
  addCustomOpOption(c);
  struct Opts {
    std::string model, input, labels;
    int threads = 1;
    int64_t batch = 32;
  };
  auto o = std::make_shared<Opts>();
  c->option("model", o->model, "ONNX model, or a package folder (output/PREFIX) to evaluate on the simulator")->required();
  c->option("--input", o->input, "Samples: name=file.npy, first dim = sample")->required();
  c->option("--labels", o->labels, "Integer class labels .npy, one per sample")->required();
  c->option("--batch", o->batch, "Samples per inference")->range(1, 65536);
  c->option("--threads,-t", o->threads, "Worker threads")->range(1, 256);
  c->callback([o, &run] {
    run = [o] {
      auto inputs = parseInputs({o->input});
      auto& [name, x] = *inputs.begin();
      Tensor y = readNpyFile(o->labels);
      auto labels = y.toInt64();
      if (x.rank() < 1 || x.dim(0) != static_cast<int64_t>(labels.size()))
        throw Error(ErrorCode::kInvalidInput, fmt::format("{} samples but {} labels", x.rank() ? x.dim(0) : 0, labels.size()));
      int64_t n = x.dim(0);
      std::unique_ptr<Runtime> rt;
      std::unique_ptr<Model> m;
      std::unique_ptr<Session> s;
      Shape bs = x.shape();
      if (std::filesystem::is_directory(o->model)) {
        rt = std::make_unique<Runtime>(o->model, RuntimeOptions{o->threads, false});
        const RuntimeTensor* in = &packageInput(*rt, name, "--input");
        bs = in->shape;  // the package's batch
        if (bs.empty() || bs[0] < 1 || shapeNumel(bs) / bs[0] != x.numel() / std::max<int64_t>(n, 1))
          throw Error(ErrorCode::kInvalidInput, fmt::format("package input '{}' is {}, samples are {}", name, shapeStr(bs), shapeStr(x.shape())));
      } else {
        bs[0] = std::min<int64_t>(o->batch, n);
        LoadOptions lo;
        lo.input_shapes[name] = bs;
        m = std::make_unique<Model>(Model::load(o->model, lo));
        s = std::make_unique<Session>(*m, o->threads);
      }
      int64_t b = bs[0];
      size_t sample_bytes = x.nbytes() / static_cast<size_t>(n);
      int64_t correct = 0;
      double t0 = nowMs();
      for (int64_t start = 0; start < n; start += b) {
        int64_t cnt = std::min(b, n - start);
        Tensor batch(x.dtype(), bs);  // a short last batch is zero-padded
        std::memcpy(batch.raw(), static_cast<const uint8_t*>(x.raw()) + static_cast<size_t>(start) * sample_bytes,
                    static_cast<size_t>(cnt) * sample_bytes);
        Tensor logits;
        if (rt) {
          rt->setInput(name, batch);
          rt->run();
          logits = rt->outputFloat(rt->outputs()[0].name);
        } else {
          logits = s->run({{name, batch}})[0];
        }
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
