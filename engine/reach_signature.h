#pragma once

#include <array>
#include <cstdint>

namespace ag {

// Note [Reachability signature]
// The topological number only orders nodes: a node on a side branch as tall as the requested
// inputs' nodes passes the topo_nr cut even though it cannot reach any of them. So each node
// also carries a small Bloom-filter-like signature: one bit picked by hashing its sequence_nr,
// OR-ed with the signatures of its children (computed with topological_nr in set_next_edges and
// frozen the same way). If X can reach Y, every bit of Y's signature is set in X's, in particular
// Y's own bit; so when X's signature has none of the requested inputs' own bits, X cannot reach
// any of them and discovery does not expand it. A collision only costs a visit; a wrong cut is
// impossible. 256 bits keep collisions rare for the few hundred nodes below a typical input
// (measured by //proptests:discovery_excess); in huge graphs the signature saturates and the
// topological number does the work.
class ReachSignature {
 public:
  static constexpr int kBits = 256;

  static ReachSignature of_key(uint64_t key) {
    ReachSignature s;
    // A multiplicative hash spreads consecutive keys (sequence numbers) over the bits.
    const uint64_t bit = (key * 0x9E3779B97F4A7C15ull) >> 56;  // 0..255
    s.words_[bit >> 6] = uint64_t{1} << (bit & 63);
    return s;
  }
  ReachSignature& operator|=(const ReachSignature& o) {
    for (size_t i = 0; i < words_.size(); ++i) words_[i] |= o.words_[i];
    return *this;
  }
  bool intersects(const ReachSignature& o) const {
    for (size_t i = 0; i < words_.size(); ++i) {
      if (words_[i] & o.words_[i]) return true;
    }
    return false;
  }
  bool contains(const ReachSignature& o) const {
    for (size_t i = 0; i < words_.size(); ++i) {
      if ((words_[i] & o.words_[i]) != o.words_[i]) return false;
    }
    return true;
  }

 private:
  std::array<uint64_t, kBits / 64> words_{};
};

}  // namespace ag
