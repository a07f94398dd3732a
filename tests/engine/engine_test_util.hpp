// Helpers shared by the engine kernel tests: run one op on concrete tensors through engine::Engine.
#pragma once

#include "engine/engine.hpp"
#include "ops/registry.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace npuc::engine::test {

/// Builds a graph with one `op` node whose inputs are graph inputs (an undefined Tensor is an omitted optional
/// input), infers shapes, runs it and returns its outputs. Outputs listed in `skip_outputs` are not wired.
inline std::vector<Tensor> runOp(const std::string& op, const std::vector<Tensor>& inputs,
                                 const std::map<std::string, ir::Attr>& attrs = {}, int num_outputs = 1,
                                 int opset = 13, const std::vector<int>& skip_outputs = {}) {
  ir::Graph g;
  g.opset = opset;
  std::vector<ir::ValueId> ins, outs;
  std::vector<Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      ins.push_back(ir::kNoValue);
      continue;
    }
    ir::Value& v = g.addValue("in" + std::to_string(i), ir::makeType(inputs[i].dtype(), inputs[i].shape()));
    ins.push_back(v.id);
    g.inputs().push_back(v.id);
    feeds.push_back(inputs[i]);
  }
  for (int i = 0; i < num_outputs; ++i) {
    bool skip = std::find(skip_outputs.begin(), skip_outputs.end(), i) != skip_outputs.end();
    outs.push_back(skip ? ir::kNoValue : g.addValue("out" + std::to_string(i)).id);
  }
  ir::Node& n = g.addNode(op, "n", ins, outs);
  n.attrs = attrs;
  for (ir::ValueId o : outs)
    if (o != ir::kNoValue) g.outputs().push_back(o);
  ops::inferShapes(g);
  Engine e(g);
  return e.run(feeds);
}

/// Every output's shape and bits as want's (`what` names the run in a failure).
inline void expectSameBits(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape()) << what << " output " << i;
    EXPECT_EQ(std::memcmp(got[i].raw(), want[i].raw(), got[i].nbytes()), 0) << what << " output " << i;
  }
}

/// The graph on engines of 1, 2 and 3 threads (default options), each run twice (prepared once, run again): want's bits.
inline void expectSameBitsAtThreads(const ir::Graph& g, const std::vector<Tensor>& inputs, const std::vector<Tensor>& want) {
  for (int threads : {1, 2, 3}) {
    EngineOptions o;
    o.threads = threads;
    Engine e(g, o);
    expectSameBits(e.run(inputs), want, "threads " + std::to_string(threads));
    expectSameBits(e.run(inputs), want, "threads " + std::to_string(threads) + ", again");
  }
}

/// The outputs two callbacks kept (keepOutputBits): the same nodes, each with the same bits.
inline void expectSameNodeBits(const std::map<std::string, std::vector<uint32_t>>& got,
                               const std::map<std::string, std::vector<uint32_t>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, bits] : want) {
    ASSERT_TRUE(got.count(name)) << name;
    EXPECT_EQ(got.at(name), bits) << name;
  }
}

/// A node callback that keeps each node's first output, by node name, as bits.
inline NodeCallback keepOutputBits(std::map<std::string, std::vector<uint32_t>>& m) {
  return [&m](const ir::Node& n, const std::vector<Tensor>& outs) {
    std::vector<uint32_t>& bits = m[n.name];
    bits.resize(outs[0].nbytes() / sizeof(uint32_t));
    std::memcpy(bits.data(), outs[0].raw(), outs[0].nbytes());
  };
}

template <typename T>
std::vector<T> vals(const Tensor& t) {
  auto s = t.values<T>();
  return {s.begin(), s.end()};
}

inline Tensor f32(Shape s, std::vector<float> v) { return Tensor::fromVector<float>(std::move(s), v); }
inline Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::fromVector<int64_t>(std::move(s), v); }
inline Tensor i64v(std::vector<int64_t> v) {
  Shape s{static_cast<int64_t>(v.size())};
  return Tensor::fromVector<int64_t>(s, v);
}
/// Uniform values in [-1, 1) from a seeded generator.
inline Tensor randomTensor(Shape s, uint32_t seed) {
  Tensor t(DType::kF32, std::move(s));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}
inline Tensor iota(Shape s) {
  Tensor t(DType::kF32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

/// Expects `fn` to throw npuc::Error with `code`.
template <typename F>
void expectError(F&& fn, ErrorCode code) {
  try {
    fn();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
  }
}

}  // namespace npuc::engine::test
