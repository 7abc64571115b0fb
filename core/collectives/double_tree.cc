// NCCL's double binary tree allreduce (src/graph/trees.cc ncclGetBtree / ncclGetDtree for the trees
// over nodes, src/graph/connect.cc for the chain inside a node, src/device/all_reduce.h
// runTreeUpDown for the pipelined up and down passes).
#include <string>
#include <vector>

#include "core/check.h"
#include "core/collectives/nccl.h"
#include "core/ops.h"

namespace bagua::collectives {

NodeLinks btree_links(int nodes, int node) {
  // Node i's `bit` is its lowest set bit (node 0: the least power of two >= nodes). Node 0 is the
  // root, with the single child bit / 2. Any other node's parent is i with `bit` cleared and the next
  // bit set, or (that being past the last node) i with `bit` cleared; its children are i - bit / 2
  // and the first of i + bit / 2, i + bit / 4, ... below `nodes`.
  BAGUA_CHECK(nodes >= 1 && node >= 0 && node < nodes,
              "btree_links: node " + std::to_string(node) + " of " + std::to_string(nodes));
  int bit = 1;
  while (bit < nodes && (bit & node) == 0)
    bit <<= 1;
  NodeLinks links;
  if (node == 0) {
    links.child1 = nodes > 1 ? bit >> 1 : -1;
    return links;
  }
  links.parent = (node ^ bit) | (bit << 1);
  if (links.parent >= nodes) links.parent = node ^ bit;
  const int half = bit >> 1;
  if (half == 0) return links;
  links.child0 = node - half;
  for (int low = half; low > 0; low >>= 1) {
    if (node + low < nodes) {
      links.child1 = node + low;
      break;
    }
  }
  return links;
}

NodeLinks dtree_links(int nodes, int node, int tree) {
  BAGUA_CHECK(tree == 0 || tree == 1, "dtree_links: tree " + std::to_string(tree));
  if (tree == 0) return btree_links(nodes, node);
  // The second tree: the first one shifted by one node (odd counts) or mirrored (even counts), so
  // that a node that is a leaf in one tree is inner in the other.
  const bool shift = nodes % 2 == 1;
  auto to_first = [&](int i) { return shift ? mod(i - 1, nodes) : nodes - 1 - i; };
  auto from_first = [&](int i) { return i == -1 ? -1 : shift ? mod(i + 1, nodes) : nodes - 1 - i; };
  const NodeLinks first = btree_links(nodes, to_first(node));
  return {from_first(first.parent), from_first(first.child0), from_first(first.child1)};
}

TreePlace double_tree_place(const HostLayout& layout, int rank, int tree) {
  const int nodes = static_cast<int>(layout.hosts.size());
  int host = -1;
  int local = -1;
  for (int h = 0; h < nodes && host < 0; ++h) {
    const std::vector<int>& ranks = layout.hosts[h];
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (ranks[i] == rank) {
        host = h;
        local = static_cast<int>(i);
      }
    }
  }
  BAGUA_CHECK(host >= 0, "double_tree_place: rank " + std::to_string(rank) + " on no host");
  const std::vector<int>& chain = layout.hosts[host];
  TreePlace place;
  if (local > 0) {
    place.parent = chain[local - 1];
  } else {
    const NodeLinks links = dtree_links(nodes, host, tree);
    if (links.parent >= 0) place.parent = layout.hosts[links.parent].front();
    for (int child : {links.child0, links.child1})
      if (child >= 0) place.children.push_back(layout.hosts[child].front());
  }
  if (local + 1 < static_cast<int>(chain.size())) place.children.push_back(chain[local + 1]);
  return place;
}

namespace {

// The sends of one part to one peer, at most `slices` in flight (pipelined_ring.cc's window).
class PeerWindow {
 public:
  PeerWindow(int peer, int slices) : peer_(peer), slices_(static_cast<size_t>(slices)) {}
  void send(Transport& transport, const BufferView& slice, Tag tag) {
    if (in_flight_.size() == slices_) {
      in_flight_.front()->wait();
      in_flight_.erase(in_flight_.begin());
    }
    in_flight_.push_back(transport.isend(slice, peer_, tag));
  }
  void drain() {
    wait_all(in_flight_);
    in_flight_.clear();
  }

 private:
  int peer_;
  size_t slices_;
  std::vector<RequestPtr> in_flight_;
};

}  // namespace

void double_tree_allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag,
                           const PipelineOptions& options) {
  // The buffer is cut into `parts` = 2 max(1, C / 2); part p runs on tree p mod 2, where the rank has
  // a `parent` (none at the tree's root) and `children`. Each part moves `slice` by slice. Up pass:
  // for each slice, a rank receives its children's partial sums into `incoming`, reduces them into
  // its own and sends the sum to its parent. Down pass: it receives the complete slice from its
  // parent (the root has it) and forwards it to its children. Every (part, peer) pair has its own
  // window of slices in flight.
  validate(options);
  const int ranks = transport.size();
  if (ranks == 1 || data.count() == 0) return;
  const HostLayout layout = host_layout(transport);
  const int parts = 2 * std::max(1, options.channels / 2);
  const Chunking chunking(data, parts);
  const size_t slice = options.slice_elements(size_of(data.dtype()));
  std::vector<TreePlace> place;
  std::vector<std::vector<PeerWindow>> up(parts);    // to the parent
  std::vector<std::vector<PeerWindow>> down(parts);  // to each child
  size_t most_children = 0;
  for (int p = 0; p < parts; ++p) {
    place.push_back(double_tree_place(layout, transport.rank(), p % 2));
    if (place[p].parent >= 0) up[p].emplace_back(place[p].parent, options.slices_in_flight());
    for (int child : place[p].children)
      down[p].emplace_back(child, options.slices_in_flight());
    most_children = std::max(most_children, place[p].children.size());
  }
  const Buffer incoming =
      Buffer::like(data, data.dtype(), most_children * std::min(slice, chunking.max_count()));
  const size_t slices = (chunking.max_count() + slice - 1) / slice;
  auto piece_of = [&](int p, size_t j) {
    const BufferView part = chunking.chunk(p);
    const size_t offset = j * slice;
    return offset < part.count() ? part.slice(offset, std::min(slice, part.count() - offset))
                                 : BufferView();
  };

  for (size_t j = 0; j < slices; ++j) {
    for (int p = 0; p < parts; ++p) {
      const BufferView piece = piece_of(p, j);
      if (piece.count() == 0) continue;
      std::vector<RequestPtr> from_children;
      for (size_t c = 0; c < place[p].children.size(); ++c)
        from_children.push_back(transport.irecv(
            incoming.view().slice(c * piece.count(), piece.count()), place[p].children[c], tag));
      for (size_t c = 0; c < from_children.size(); ++c) {
        from_children[c]->wait();
        bagua::reduce(piece, incoming.view().slice(c * piece.count(), piece.count()), op);
      }
      if (!up[p].empty()) up[p].front().send(transport, piece, tag);
    }
  }
  // The down pass receives into what the up pass sent.
  for (auto& windows : up)
    for (PeerWindow& w : windows)
      w.drain();
  for (size_t j = 0; j < slices; ++j) {
    for (int p = 0; p < parts; ++p) {
      const BufferView piece = piece_of(p, j);
      if (piece.count() == 0) continue;
      if (place[p].parent >= 0) transport.recv(piece, place[p].parent, tag);
      for (PeerWindow& w : down[p])
        w.send(transport, piece, tag);
    }
  }
  for (auto& windows : down)
    for (PeerWindow& w : windows)
      w.drain();
}

}  // namespace bagua::collectives
