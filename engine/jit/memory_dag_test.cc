#include "engine/jit/memory_dag.h"

#include <gtest/gtest.h>

#include <vector>

namespace ag::jit {
namespace {

std::vector<Element> items(const ElementList& l) { return {l.begin(), l.end()}; }
std::vector<Element> items(const LocationSet& s) {
  return {s.elements().begin(), s.elements().end()};
}

// Note [Compact alias tables]: an element's lists take 16 bytes each.
static_assert(sizeof(ElementList) == 16);
static_assert(sizeof(LocationSet) == 16);

TEST(ElementListTest, GrowsFromInlineToHeapAndKeepsOrder) {
  ElementList l;
  EXPECT_TRUE(l.empty());
  for (Element e = 0; e < 9; ++e) {
    l.push_back(10 * e);
    ASSERT_EQ(l.size(), e + 1);
  }
  EXPECT_EQ(items(l), (std::vector<Element>{0, 10, 20, 30, 40, 50, 60, 70, 80}));
}

TEST(ElementListTest, CopiesAndMovesOwnTheirElements) {
  ElementList one;
  one.push_back(7);
  ElementList many;
  for (Element e : {1, 2, 3}) many.push_back(e);

  ElementList copy = many;
  copy.push_back(4);
  EXPECT_EQ(items(many), (std::vector<Element>{1, 2, 3}));
  EXPECT_EQ(items(copy), (std::vector<Element>{1, 2, 3, 4}));

  copy = one;  // heap to inline
  EXPECT_EQ(items(copy), (std::vector<Element>{7}));
  one = many;  // inline to heap
  EXPECT_EQ(items(one), (std::vector<Element>{1, 2, 3}));

  ElementList moved = std::move(many);
  EXPECT_EQ(items(moved), (std::vector<Element>{1, 2, 3}));
  EXPECT_TRUE(many.empty());  // NOLINT(bugprone-use-after-move): a moved-from list is empty
  moved = std::move(copy);
  EXPECT_EQ(items(moved), (std::vector<Element>{7}));

  const Element range[] = {5, 6, 8, 9, 11};
  moved.assign(range, range + 5);
  EXPECT_EQ(items(moved), (std::vector<Element>{5, 6, 8, 9, 11}));
  moved.assign(range, range + 1);
  EXPECT_EQ(items(moved), (std::vector<Element>{5}));
}

TEST(LocationSetTest, UnionAndIntersection) {
  LocationSet a(3);
  LocationSet b(std::vector<Element>{1, 5});
  EXPECT_FALSE(a.intersects(b));
  a.insertAll(b);
  EXPECT_EQ(items(a), (std::vector<Element>{1, 3, 5}));
  EXPECT_TRUE(a.intersects(LocationSet(5)));
  EXPECT_FALSE(LocationSet().intersects(a));
}

TEST(MemoryDagTest, LocationsFollowPointersAndContents) {
  MemoryDag dag;
  const Element base = dag.makeFreshElement();
  const Element view = dag.makeFreshElement();
  const Element list = dag.makeFreshElement();
  const Element other = dag.makeFreshElement();
  dag.makePointerTo(view, base);
  EXPECT_EQ(items(dag.memoryLocations(view)), (std::vector<Element>{base}));
  dag.addToContainedElements(view, list);
  EXPECT_EQ(items(dag.allContainedMemoryLocations(list)), (std::vector<Element>{base, list}));
  EXPECT_EQ(items(dag.allContainedMemoryLocations(other)), (std::vector<Element>{other}));
  // A new edge from an element something points to drops the cached answers through it.
  EXPECT_EQ(items(dag.memoryLocations(base)), (std::vector<Element>{base}));
  dag.makePointerTo(base, other);
  EXPECT_EQ(items(dag.memoryLocations(view)), (std::vector<Element>{other}));
  // ... and the answer of the element itself, which it had from its creation.
  EXPECT_EQ(items(dag.memoryLocations(base)), (std::vector<Element>{other}));
  const Element lone = dag.makeFreshElement();
  EXPECT_EQ(items(dag.memoryLocations(lone)), (std::vector<Element>{lone}));
  dag.makePointerTo(lone, base);
  EXPECT_EQ(items(dag.memoryLocations(lone)), (std::vector<Element>{other}));
}

}  // namespace
}  // namespace ag::jit
