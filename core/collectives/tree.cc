// Tree collectives: binomial and chain reduce, binomial and chain broadcast (all in segments), tree
// allreduce.
#include <algorithm>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/collectives/collectives.h"
#include "core/operation.h"
#include "core/ops.h"

namespace bagua::collectives {

namespace {

// A rank's place in a tree over the group: whom it receives from and whom it sends to, in sending
// order.
struct TreePlace {
  int parent = -1;  // -1 at the root
  std::vector<int> children;
};

// The binomial tree rooted at `root`. With relative = rank - root (mod ranks), the parent of relative
// v > 0 is v with its lowest set bit cleared; the children of v are v + m for every power of two m
// below that bit (below `ranks` at the root) with v + m < ranks. Children are listed largest subtree
// first, the order a broadcast sends in; a reduce receives from all of them at once. Depth floor(log2
// ranks); the root has ceil(log2 ranks) children.
TreePlace binomial_place(int ranks, int rank, int root) {
  const int relative = mod(rank - root, ranks);
  TreePlace place;
  int lowest_bit = 1;
  while (lowest_bit < ranks && (relative & lowest_bit) == 0)
    lowest_bit <<= 1;
  if (relative != 0) place.parent = mod(relative - lowest_bit + root, ranks);
  for (int m = lowest_bit / 2; m >= 1; m /= 2)
    if (relative + m < ranks) place.children.push_back(mod(relative + m + root, ranks));
  return place;
}

// The chain root, root + 1, ..., root - 1 (mod ranks).
TreePlace chain_place(int ranks, int rank, int root) {
  const int relative = mod(rank - root, ranks);
  TreePlace place;
  if (relative > 0) place.parent = mod(rank - 1, ranks);
  if (relative + 1 < ranks) place.children.push_back(mod(rank + 1, ranks));
  return place;
}

// A buffer cut into runs of at most `segment_elements` elements (0: one run, the whole buffer).
class Segments {
 public:
  Segments(const BufferView& data, size_t segment_elements)
      : data_(data),
        length_(segment_elements == 0 ? data.count() : std::min(segment_elements, data.count())) {}
  size_t size() const { return length_ == 0 ? 0 : (data_.count() + length_ - 1) / length_; }
  size_t max_count() const { return length_; }
  BufferView operator[](size_t i) const {
    const size_t offset = i * length_;
    return data_.slice(offset, std::min(length_, data_.count() - offset));
  }

 private:
  BufferView data_;
  size_t length_;
};

void check_root(const Transport& transport, int root, const char* who) {
  if (root < 0 || root >= transport.size())
    throw ConfigError(std::string(who) + ": root " + std::to_string(root) + " outside a group of " +
                      std::to_string(transport.size()) + " ranks (rank " +
                      std::to_string(transport.rank()) + ")");
}

void tree_broadcast(Transport& transport, const BufferView& data, const TreePlace& place, Tag tag,
                    size_t segment_elements) {
  // The data moves down the tree in `segments`. A rank receives segment s from its `parent` (the
  // receive of segment s + 1 is already posted, so it arrives while segment s is forwarded) and sends
  // it to each of its `children` in turn.
  const Segments segments(data, segment_elements);
  RequestPtr next_receive;
  if (place.parent >= 0) next_receive = transport.irecv(segments[0], place.parent, tag);
  for (size_t s = 0; s < segments.size(); ++s) {
    const BufferView segment = segments[s];
    if (place.parent >= 0) {
      next_receive->wait();
      if (s + 1 < segments.size()) next_receive = transport.irecv(segments[s + 1], place.parent, tag);
    }
    for (int child : place.children)
      transport.send(segment, child, tag);
  }
}

void binomial_reduce(Transport& transport, const BufferView& data, int root, ReduceOp op, Tag tag,
                     size_t segment_elements) {
  // Binomial tree towards `root` (see binomial_place), the data in `segments`. For each segment a rank
  // receives its `children`'s partial reductions at once into `incoming` (one slot per child), reduces
  // them into its own segment in a fixed order, and sends the result to its `parent` without waiting,
  // so that the next segment is received while this one leaves; a rank's segments leave one at a time
  // (it waits for the previous `sending` to finish first), so that each goes at the link's full rate.
  const int ranks = transport.size();
  const TreePlace place = binomial_place(ranks, transport.rank(), root);
  const Segments segments(data, segment_elements);
  const Buffer incoming =
      Buffer::like(data, data.dtype(), place.children.size() * segments.max_count());
  RequestPtr sending;
  for (size_t s = 0; s < segments.size(); ++s) {
    const BufferView segment = segments[s];
    std::vector<BufferView> received;
    std::vector<RequestPtr> receives;
    for (size_t c = 0; c < place.children.size(); ++c) {
      received.push_back(incoming.view().slice(c * segments.max_count(), segment.count()));
      receives.push_back(transport.irecv(received.back(), place.children[c], tag));
    }
    for (size_t c = 0; c < place.children.size(); ++c) {
      receives[c]->wait();
      bagua::reduce(segment, received[c], op);
    }
    if (place.parent >= 0) {
      if (sending) sending->wait();
      sending = transport.isend(segment, place.parent, tag);
    }
  }
  if (sending) sending->wait();
}

void chain_reduce(Transport& transport, const BufferView& data, int root, ReduceOp op, Tag tag,
                  size_t segment_elements) {
  // The chain broadcast run backwards: the ranks stand in the chain root, root + 1, ..., root - 1
  // (chain_place), and every segment travels from its far end towards `root`. The data is cut into
  // `segments`. For each segment a rank receives its `child`'s (rank + 1's) partial reduction into one
  // of the two slots of `incoming`, reduces it into its own segment, and sends the result to its
  // `parent`, rank - 1 (the root sends nothing, the far end receives nothing). The receive of the
  // next segment is posted, into the other slot, before this one is reduced, so that it arrives while
  // this one is reduced and sent; a rank's segments leave one at a time (it waits for the previous
  // `sending` to finish first), so that each goes at the link's full rate. Every element is reduced in
  // one order, root's own + (root + 1's + (... + root - 1's)), the same in every run.
  const int ranks = transport.size();
  const TreePlace place = chain_place(ranks, transport.rank(), root);
  const Segments segments(data, segment_elements);
  const bool has_child = !place.children.empty();
  const Buffer incoming = Buffer::like(data, data.dtype(), has_child ? 2 * segments.max_count() : 0);
  auto slot = [&](size_t s) {
    return incoming.view().slice((s % 2) * segments.max_count(), segments[s].count());
  };
  RequestPtr next_receive;
  if (has_child) next_receive = transport.irecv(slot(0), place.children.front(), tag);
  RequestPtr sending;
  for (size_t s = 0; s < segments.size(); ++s) {
    const BufferView segment = segments[s];
    if (has_child) {
      next_receive->wait();
      if (s + 1 < segments.size())
        next_receive = transport.irecv(slot(s + 1), place.children.front(), tag);
      bagua::reduce(segment, slot(s), op);
    }
    if (place.parent >= 0) {
      if (sending) sending->wait();
      sending = transport.isend(segment, place.parent, tag);
    }
  }
  if (sending) sending->wait();
}

}  // namespace

void reduce(Transport& transport, const BufferView& data, int root, ReduceOp op, Tag tag,
            size_t segment_elements, ReduceAlgo algo) {
  const OperationScope scope("reduce");
  check_root(transport, root, "reduce");
  const int ranks = transport.size();
  if (ranks == 1 || data.count() == 0) return;
  switch (algo) {
    case ReduceAlgo::kBinomial:
      binomial_reduce(transport, data, root, op, tag, segment_elements);
      return;
    case ReduceAlgo::kChain:
      chain_reduce(transport, data, root, op, tag, segment_elements);
      return;
  }
  BAGUA_CHECK(false, "reduce: unknown algorithm " + std::to_string(static_cast<int>(algo)));
}

void broadcast(Transport& transport, const BufferView& data, int root, Tag tag, BroadcastAlgo algo,
               size_t segment_elements) {
  const OperationScope scope("broadcast");
  check_root(transport, root, "broadcast");
  const int ranks = transport.size();
  if (ranks == 1 || data.count() == 0) return;
  switch (algo) {
    case BroadcastAlgo::kBinomial:
      tree_broadcast(transport, data, binomial_place(ranks, transport.rank(), root), tag,
                     segment_elements);
      return;
    case BroadcastAlgo::kChain:
      tree_broadcast(transport, data, chain_place(ranks, transport.rank(), root), tag,
                     segment_elements);
      return;
  }
  BAGUA_CHECK(false, "broadcast: unknown algorithm " + std::to_string(static_cast<int>(algo)));
}

void tree_allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag,
                    size_t segment_elements) {
  // A binomial reduce to rank 0, then a binomial broadcast from rank 0 over the same tree (the reduce
  // sends child to parent, the broadcast parent to child, so the shared tag cannot mix them up).
  const OperationScope scope("tree allreduce");
  reduce(transport, data, 0, op, tag, segment_elements);
  broadcast(transport, data, 0, tag, BroadcastAlgo::kBinomial, segment_elements);
}

}  // namespace bagua::collectives
