// NCCL's double binary tree allreduce (src/graph/trees.cc ncclGetBtree / ncclGetDtree for the trees
// over nodes, src/graph/connect.cc for the chain inside a node, src/device/all_reduce.h
// runTreeSplit for the pipelined up and down passes, each channel's passes concurrent).
#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/collectives/nccl.h"
#include "core/collectives/nccl_flow.h"
#include "core/operation.h"
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

namespace {

// Where a rank sits: its host and its place in that host's chain for `tree` (tree 0 runs the host's
// ranks in order, tree 1 the other way, so that on hosts of two or more ranks no rank heads its host in
// both trees).
struct Seat {
  int host = -1;
  int link = -1;  // position in the tree's chain: 0 is the host's head
};
Seat seat_of(const HostLayout& layout, int rank, int tree) {
  for (size_t h = 0; h < layout.hosts.size(); ++h) {
    const std::vector<int>& ranks = layout.hosts[h];
    for (size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i] == rank) {
        const int n = static_cast<int>(ranks.size());
        return {static_cast<int>(h), tree == 0 ? static_cast<int>(i) : n - 1 - static_cast<int>(i)};
      }
  }
  BAGUA_CHECK(false, "double_tree_place: rank " + std::to_string(rank) + " on no host");
  return {};
}
// The rank at position `link` of host h's chain in `tree`.
int chain_rank(const HostLayout& layout, int host, int link, int tree) {
  const std::vector<int>& ranks = layout.hosts[host];
  return tree == 0 ? ranks[link] : ranks[ranks.size() - 1 - link];
}

}  // namespace

TreePlace double_tree_place(const HostLayout& layout, int rank, int tree) {
  const int nodes = static_cast<int>(layout.hosts.size());
  const Seat seat = seat_of(layout, rank, tree);
  const int chain = static_cast<int>(layout.hosts[seat.host].size());
  TreePlace place;
  if (seat.link > 0) {
    place.parent = chain_rank(layout, seat.host, seat.link - 1, tree);
  } else {
    const NodeLinks links = dtree_links(nodes, seat.host, tree);
    if (links.parent >= 0) place.parent = chain_rank(layout, links.parent, 0, tree);
    for (int child : {links.child0, links.child1})
      if (child >= 0) place.children.push_back(chain_rank(layout, child, 0, tree));
  }
  if (seat.link + 1 < chain)
    place.children.push_back(chain_rank(layout, seat.host, seat.link + 1, tree));
  return place;
}

namespace {

// The sends of one part to one peer, at most `slices` in flight (pipelined_ring.cc's window).
class PeerWindow {
 public:
  PeerWindow(int peer, int slices) : peer_(peer), slices_(static_cast<size_t>(slices)) {}
  void send(Transport& transport, const BufferView& slice, Tag tag) {
    if (in_flight_.size() == slices_) pop();
    in_flight_.push_back(transport.isend(slice, peer_, tag));
  }
  void drain() {
    while (!in_flight_.empty())
      pop();
  }

 private:
  void pop() {
    in_flight_.front()->wait();
    in_flight_.erase(in_flight_.begin());
  }
  int peer_;
  size_t slices_;
  std::vector<RequestPtr> in_flight_;
};

}  // namespace

void double_tree_allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag,
                           const PipelineOptions& options) {
  // The buffer is cut into `parts` = 2 max(1, C / 2); part p runs on tree p mod 2, where the rank has a
  // `parent` (none at the tree's root) and `children`, and moves `slice` by slice. As NCCL's
  // runTreeSplit (src/device/all_reduce.h) runs each channel's tree on its own thread block, split into
  // a group that reduces up and one that broadcasts down, a rank runs per tree:
  //   up      (not at the root) for each slice of each of the tree's parts: receive it from each
  //           child, reduce it into its own, send the sum to the parent;
  //   down    (not at the root) for each slice: receive the complete slice from the parent into
  //           `result`, send it to each child;
  //   root    (at the root) for each slice: receive it from each child, reduce it into its own, send
  //           the sum to each child (directRecvReduceCopyDirectSend).
  // Each is a stream of its own (Transport::concurrently), the two trees on matching spaces of their
  // own, so that no tree waits for the other, nor a pass for the other pass; every (part, peer) pair
  // has its own window of slices in flight. A stream posts all its receives first, in the order its
  // peers' streams send. Where the backend runs the streams one after another (tree 0 before tree 1,
  // up before down), the order is still deadlock-free: a pass waits only for earlier passes of its
  // tree. The down pass writes `result`, not the buffer the up pass sends from; the buffer takes the
  // result once every stream has returned.
  const OperationScope scope("double binary tree allreduce");
  validate(options);
  const int ranks = transport.size();
  const int me = transport.rank();
  if (ranks == 1 || data.count() == 0) return;
  if (FlowCapable* flow = flow_granularity(transport, data))
    return flow_double_tree_allreduce(*flow, transport, data, tag, options);
  const HostLayout layout = host_layout(transport);
  const int parts = 2 * std::max(1, options.channels / 2);
  const Chunking chunking(data, parts);
  const size_t slice = options.slice_elements(size_of(data.dtype()));
  auto piece_of = [&](const BufferView& part, size_t j) {
    const size_t offset = j * slice;
    return part.slice(offset, std::min(slice, part.count() - offset));
  };
  auto slices_of = [&](int p) { return (chunking.chunk(p).count() + slice - 1) / slice; };
  const Buffer result = Buffer::like(data, data.dtype(), data.count());
  const Chunking result_parts(result.view(), parts);

  // Every (slice, part) of tree `tree` in the order all its streams take them: slice by slice, the
  // tree's parts in turn.
  auto items_of = [&](int tree) {
    std::vector<std::pair<size_t, int>> items;
    size_t most = 0;
    for (int p = tree; p < parts; p += 2)
      most = std::max(most, slices_of(p));
    for (size_t j = 0; j < most; ++j)
      for (int p = tree; p < parts; p += 2)
        if (j < slices_of(p)) items.emplace_back(j, p);
    return items;
  };
  // Receives from `peers` of every item, each into its own slot of `into` (consecutive per item).
  auto post_receives = [&](Transport& wire, const std::vector<std::pair<size_t, int>>& items,
                           const std::vector<int>& peers, const Buffer& into) {
    std::vector<RequestPtr> received;
    size_t offset = 0;
    for (const auto& [j, p] : items) {
      const size_t count = piece_of(chunking.chunk(p), j).count();
      for (int peer : peers) {
        received.push_back(wire.irecv(into.view().slice(offset, count), peer, tag));
        offset += count;
      }
    }
    return received;
  };
  auto total_elements = [&](const std::vector<std::pair<size_t, int>>& items, size_t peers) {
    size_t n = 0;
    for (const auto& [j, p] : items)
      n += piece_of(chunking.chunk(p), j).count() * peers;
    return n;
  };
  // Windows per (part, peer) to `peers`.
  auto windows_to = [&](const std::vector<int>& peers) {
    std::vector<std::vector<PeerWindow>> windows(static_cast<size_t>(parts));
    for (int p = 0; p < parts; ++p)
      for (int peer : peers)
        windows[static_cast<size_t>(p)].emplace_back(peer, options.slices_in_flight());
    return windows;
  };
  auto drain = [](std::vector<std::vector<PeerWindow>>& windows) {
    for (std::vector<PeerWindow>& of_part : windows)
      for (PeerWindow& w : of_part)
        w.drain();
  };

  // Up and the root's pass: receive each slice from every child, reduce it into the rank's own (the
  // children in rank order, so that the sums are the same bits however the passes interleave), send
  // the sum to `to` (the parent, or at the root the children).
  auto reduce_pass = [&](Transport& space, int tree, std::vector<int> children,
                         const std::vector<int>& to) {
    std::sort(children.begin(), children.end());
    std::unique_ptr<Transport> lines;
    Transport& wire = protocol_transport(space, options, lines);
    const std::vector<std::pair<size_t, int>> items = items_of(tree);
    const Buffer incoming = Buffer::like(data, data.dtype(), total_elements(items, children.size()));
    std::vector<RequestPtr> received = post_receives(wire, items, children, incoming);
    std::vector<std::vector<PeerWindow>> windows = windows_to(to);
    size_t next = 0;
    size_t offset = 0;
    for (const auto& [j, p] : items) {
      const BufferView piece = piece_of(chunking.chunk(p), j);
      for (size_t c = 0; c < children.size(); ++c) {
        received[next++]->wait();
        bagua::reduce(piece, incoming.view().slice(offset, piece.count()), op);
        offset += piece.count();
      }
      for (PeerWindow& w : windows[static_cast<size_t>(p)])
        w.send(wire, piece, tag);
    }
    drain(windows);
  };
  // Down: receive each slice from the parent into `result`, send it to every child.
  auto broadcast_pass = [&](Transport& space, int tree, int parent, const std::vector<int>& children) {
    std::unique_ptr<Transport> lines;
    Transport& wire = protocol_transport(space, options, lines);
    const std::vector<std::pair<size_t, int>> items = items_of(tree);
    std::vector<RequestPtr> received;
    for (const auto& [j, p] : items)
      received.push_back(wire.irecv(piece_of(result_parts.chunk(p), j), parent, tag));
    std::vector<std::vector<PeerWindow>> windows = windows_to(children);
    for (size_t i = 0; i < items.size(); ++i) {
      const auto& [j, p] = items[i];
      received[i]->wait();
      for (PeerWindow& w : windows[static_cast<size_t>(p)])
        w.send(wire, piece_of(result_parts.chunk(p), j), tag);
    }
    drain(windows);
  };

  std::vector<ConcurrentStream> streams;
  bool root_of[2] = {false, false};
  for (int tree = 0; tree < 2; ++tree) {
    const TreePlace place = double_tree_place(layout, me, tree);
    if (place.parent < 0) {
      root_of[tree] = true;
      streams.push_back({tree, [&, tree, place](Transport& space) {
                           reduce_pass(space, tree, place.children, place.children);
                         }});
      continue;
    }
    streams.push_back({tree, [&, tree, place](Transport& space) {
                         reduce_pass(space, tree, place.children, {place.parent});
                       }});
    streams.push_back({tree, [&, tree, place](Transport& space) {
                         broadcast_pass(space, tree, place.parent, place.children);
                       }});
  }
  transport.concurrently(streams);
  for (int p = 0; p < parts; ++p)
    if (!root_of[p % 2]) copy(chunking.chunk(p), result_parts.chunk(p));
}

}  // namespace bagua::collectives
