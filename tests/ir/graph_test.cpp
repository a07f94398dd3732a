// Tests of the IR: building, verification, topological order, rewriting, cloning.
#include "ir/graph.hpp"
#include "ir/rewriter.hpp"

#include <gtest/gtest.h>

using namespace npuc;
using namespace npuc::ir;

namespace {
struct Chain {
  Graph g;
  ValueId x, y, z;
  NodeId a, b;
  Chain() {
    x = g.addValue("x", makeType(DType::kF32, {2})).id;
    y = g.addValue("y").id;
    z = g.addValue("z").id;
    g.inputs().push_back(x);
    a = g.addNode("Relu", "a", {x}, {y}).id;
    b = g.addNode("Neg", "b", {y}, {z}).id;
    g.outputs().push_back(z);
  }
};
}  // namespace

TEST(Graph, VerifiesAWellFormedGraph) {
  Chain c;
  EXPECT_NO_THROW(verify(c.g));
  EXPECT_EQ(c.g.value(c.y).producer, c.a);
  EXPECT_EQ(c.g.findValue("z"), c.z);
}

// Layers are found by name (the estimate, --keep-float, --layer-group): the importers make the names unique — a later
// node of a taken name gets the first free "name/k", an unnamed one its op.
TEST(Graph, NodeNamesAreMadeUnique) {
  Graph g;
  std::vector<ValueId> v;
  for (int i = 0; i < 5; ++i) v.push_back(g.addValue("v" + std::to_string(i), makeType(DType::kF32, {2})).id);
  g.inputs().push_back(v[0]);
  const NodeId a = g.addNode("Relu", "n", {v[0]}, {v[1]}).id, b = g.addNode("Neg", "n", {v[1]}, {v[2]}).id;
  const NodeId c = g.addNode("Abs", "n/2", {v[2]}, {v[3]}).id, d = g.addNode("Relu", "", {v[3]}, {v[4]}).id;
  g.outputs().push_back(v[4]);
  EXPECT_EQ(g.uniquifyNodeNames(), 2);
  EXPECT_EQ(g.node(a).name, "n");
  EXPECT_EQ(g.node(b).name, "n/3");  // ("n/2" is another node's)
  EXPECT_EQ(g.node(c).name, "n/2");
  EXPECT_EQ(g.node(d).name, "Relu");
  EXPECT_EQ(g.uniquifyNodeNames(), 0);
}

TEST(Graph, VerifierNamesTheNodeAndTheRule) {
  Chain c;
  ValueId w = c.g.addValue("w").id;  // never produced
  c.g.node(c.b).inputs.push_back(w);
  try {
    verify(c.g, ErrorCode::kInvalidInput);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("node 'b' (Neg)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'w'"), std::string::npos) << e.what();
  }
}

TEST(Graph, TopoSortIsStableAndDetectsCycles) {
  Chain c;
  // Put b first; sorting must restore a, b.
  Graph& g = c.g;
  ValueId u = g.addValue("u").id;
  g.addNode("Abs", "c", {c.x}, {u});
  g.topoSort();
  ASSERT_EQ(g.order().size(), 3u);
  EXPECT_EQ(g.node(g.order()[0]).name, "a");
  EXPECT_EQ(g.node(g.order()[1]).name, "b");
  g.node(c.a).inputs[0] = c.z;  // a reads b's output: cycle
  EXPECT_THROW(g.topoSort(), Error);
}

TEST(Rewriter, ReplacingAGraphOutputKeepsItsName) {
  Chain c;
  Rewriter rw(c.g);
  rw.replaceAllUses(c.z, c.y);
  rw.eraseNode(c.b);
  rw.finish();
  EXPECT_TRUE(rw.changed());
  ASSERT_EQ(c.g.outputs().size(), 1u);
  EXPECT_EQ(c.g.value(c.g.outputs()[0]).name, "z");
  EXPECT_NO_THROW(verify(c.g));
}

TEST(Rewriter, MakeConstantRemovesTheProducer) {
  Chain c;
  Rewriter rw(c.g);
  rw.makeConstant(c.y, Tensor::fromVector<float>({2}, {1.0f, 2.0f}));
  EXPECT_EQ(c.g.numNodes(), 1);
  EXPECT_TRUE(c.g.value(c.y).isConstant());
  EXPECT_NO_THROW(verify(c.g));
}

TEST(Graph, CloneIsDeepButSharesConstants) {
  Chain c;
  Tensor t = Tensor::fromVector<float>({1}, {3.0f});
  ValueId k = c.g.addConstant("k", t).id;
  auto g2 = c.g.clone();
  g2->node(c.a).name = "changed";
  EXPECT_EQ(c.g.node(c.a).name, "a");
  EXPECT_EQ(g2->value(k).constant->raw(), t.raw());
}

TEST(Node, AttributeAccessorsCheckKinds) {
  Chain c;
  Node& n = c.g.node(c.a);
  n.attrs["k"] = Attr(int64_t{3});
  n.attrs["s"] = Attr(std::string("x"));
  EXPECT_EQ(n.attrInt("k", 0), 3);
  EXPECT_EQ(n.attrInt("missing", 5), 5);
  EXPECT_THROW(n.attrInt("s", 0), Error);
  EXPECT_EQ(n.attrInts("k"), std::vector<int64_t>{3});
}

TEST(Rewriter, ReplacingAnOutputByAnInputKeepsBothNames) {
  Graph g;
  ValueId x = g.addValue("x", makeType(DType::kF32, {2})).id;
  ValueId y = g.addValue("y", makeType(DType::kF32, {2})).id;
  g.inputs().push_back(x);
  NodeId id = g.addNode("Identity", "id", {x}, {y}).id;
  g.outputs().push_back(y);
  Rewriter rw(g);
  rw.replaceAllUses(y, x);
  rw.eraseNode(id);
  rw.finish();
  EXPECT_EQ(g.value(g.inputs()[0]).name, "x");
  EXPECT_EQ(g.value(g.outputs()[0]).name, "y");
  EXPECT_NO_THROW(verify(g));
}
