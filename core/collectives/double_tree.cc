// NCCL's double binary tree allreduce (src/graph/trees.cc ncclGetBtree / ncclGetDtree for the trees
// over nodes, src/graph/connect.cc for the chain inside a node, src/device/all_reduce.h
// runTreeUpDown for the pipelined up and down passes).
#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
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
    ++posted_;
  }
  // Waits until the first `sends` sends have completed.
  void wait_for(int64_t sends) {
    while (completed_ < sends && !in_flight_.empty())
      pop();
  }
  void drain() { wait_for(posted_); }

 private:
  void pop() {
    in_flight_.front()->wait();
    in_flight_.erase(in_flight_.begin());
    ++completed_;
  }
  int peer_;
  size_t slices_;
  std::vector<RequestPtr> in_flight_;
  int64_t posted_ = 0;
  int64_t completed_ = 0;
};

// How long, in hops weighted by the links' nominal latencies, before slice 0 of a part reaches a rank:
// up, the height of the rank's subtree; down, the tree's height plus the rank's depth. Only an order
// of work, never a result: see double_tree_allreduce.
struct Reach {
  double up = 0;
  double down = 0;
};
// `height`: the tree's memo of host heights (every entry -1 at first, one per host), kept between the
// calls for one tree so that each host's height is worked out once per allreduce, not once per rank
// asked about.
Reach reach_of(const HostLayout& layout, int rank, int tree, double intra_hop, double inter_hop,
               std::vector<double>& height) {
  const int nodes = static_cast<int>(layout.hosts.size());
  // height(h): below host h's head, the deeper of its chain and its child hosts' subtrees.
  std::function<double(int)> host_height = [&](int h) {
    if (height[h] >= 0) return height[h];
    const NodeLinks l = dtree_links(nodes, h, tree);
    double best = (static_cast<double>(layout.hosts[h].size()) - 1) * intra_hop;
    for (int c : {l.child0, l.child1})
      if (c >= 0) best = std::max(best, inter_hop + host_height(c));
    return height[h] = best;
  };
  const Seat seat = seat_of(layout, rank, tree);
  const int chain = static_cast<int>(layout.hosts[seat.host].size());
  Reach reach;
  reach.up = seat.link == 0 ? host_height(seat.host) : (chain - 1 - seat.link) * intra_hop;
  int root = seat.host;
  double depth = seat.link * intra_hop;
  for (int up = dtree_links(nodes, root, tree).parent; up >= 0;
       up = dtree_links(nodes, up, tree).parent) {
    depth += inter_hop;
    root = up;
  }
  reach.down = host_height(root) + depth;
  return reach;
}

}  // namespace

void double_tree_allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag,
                           const PipelineOptions& options) {
  // The buffer is cut into `parts` = 2 max(1, C / 2); part p runs on tree p mod 2, where the rank has
  // a `parent` (none at the tree's root) and `children`, and moves `slice` by slice. A rank's `items`:
  // up (p, j), receive slice j of part p from each child, reduce it into its own and send the sum to
  // the parent (the root keeps it); down (p, j), take the complete slice from the parent (the root has
  // it) and send it to each child. Every (part, peer) pair has its own window of slices in flight.
  //
  // NCCL runs each channel on its own thread block, so one tree never waits for the other. Here one
  // rank's code serves both trees, in the order of each item's `key`: when its data should be there
  // (`reach`: hops from the data's first sender, weighted by the links' nominal latencies, plus one
  // slice time per slice; up before down, then part, then slice). Every message's data depends only
  // on messages of smaller key, so the order never deadlocks, and it interleaves the trees as their
  // data arrives. A sender sends in its own key order; each receiver posts every receive up front, in
  // the sender's key order (into `incoming`, one slot per message), so each pair's messages match.
  const OperationScope scope("double binary tree allreduce");
  validate(options);
  const int ranks = transport.size();
  const int me = transport.rank();
  if (ranks == 1 || data.count() == 0) return;
  if (FlowCapable* flow = flow_granularity(transport))
    return flow_double_tree_allreduce(*flow, transport, data, tag, options);
  std::unique_ptr<Transport> lines;
  Transport& wire = protocol_transport(transport, options.protocol, lines);
  const HostLayout layout = host_layout(transport);
  const int parts = 2 * std::max(1, options.channels / 2);
  const Chunking chunking(data, parts);
  const size_t slice = options.slice_elements(size_of(data.dtype()));
  double intra_hop = 1;
  double inter_hop = 10;
  double slice_time = 0.1;
  if (const std::optional<LinkHint> hint = transport.link_hint()) {
    const double slice_bytes = static_cast<double>(
        wire_bytes(options.protocol, Bytes(static_cast<int64_t>(slice * size_of(data.dtype()))))
            .count());
    intra_hop =
        2 * hint->intra_host_latency.seconds() + slice_bytes / hint->intra_host.bytes_per_second();
    inter_hop = 2 * (hint->intra_host_latency + hint->inter_host_latency).seconds() +
                slice_bytes / hint->inter_host.bytes_per_second();
    slice_time = slice_bytes / hint->inter_host.bytes_per_second();
  }
  auto piece_of = [&](int p, size_t j) {
    const BufferView part = chunking.chunk(p);
    const size_t offset = j * slice;
    return part.slice(offset, std::min(slice, part.count() - offset));
  };
  auto slices_of = [&](int p) { return (chunking.chunk(p).count() + slice - 1) / slice; };

  struct Key {
    double when = 0;
    int down = 0;
    int part = 0;
    size_t slice = 0;
    auto operator<=>(const Key&) const = default;
  };
  // The key of `rank`'s item (down, p, j). Only this rank and its parent and children in each tree
  // are asked about: their reaches are kept in a short list (a table over every rank would cost each
  // rank O(ranks) memory and time per call, O(ranks^2) for the world).
  struct KnownReach {
    int tree;
    int rank;
    Reach reach;
  };
  std::vector<KnownReach> known;
  std::vector<std::vector<double>> heights(2);  // per tree, reach_of's memo, filled at first use
  auto key_of = [&](int rank, bool down, int p, size_t j) {
    const int tree = p % 2;
    auto it = std::find_if(known.begin(), known.end(),
                           [&](const KnownReach& k) { return k.tree == tree && k.rank == rank; });
    if (it == known.end()) {
      std::vector<double>& height = heights[static_cast<size_t>(tree)];
      if (height.empty()) height.assign(layout.hosts.size(), -1);
      known.push_back({tree, rank, reach_of(layout, rank, tree, intra_hop, inter_hop, height)});
      it = known.end() - 1;
    }
    const Reach& r = it->reach;
    return Key{(down ? r.down : r.up) + static_cast<double>(j) * slice_time, down ? 1 : 0, p, j};
  };

  std::vector<TreePlace> place;
  std::vector<std::vector<PeerWindow>> to_parent(parts);
  std::vector<std::vector<PeerWindow>> to_children(parts);
  for (int p = 0; p < parts; ++p) {
    place.push_back(double_tree_place(layout, me, p % 2));
    if (place[p].parent >= 0) to_parent[p].emplace_back(place[p].parent, options.slices_in_flight());
    for (int child : place[p].children)
      to_children[p].emplace_back(child, options.slices_in_flight());
  }

  // Every message to this rank, in the sender's key order per sender: up (p, j) from each child,
  // down (p, j) from the parent (the key's down, part and slice are the message's). Its receive lands
  // in its own slot of `incoming`. Sized up front: a call at a few thousand ranks posts thousands of
  // receives per rank, and every rank is inside it at once.
  struct Message {
    Key key;  // the sender's
    int from = 0;
    size_t slot = 0;  // offset in `incoming`
    RequestPtr request;
  };
  // item_base[down x parts + p] + j: the index of item (down, p, j) among this rank's 2 x slices.
  std::vector<size_t> item_base(2 * static_cast<size_t>(parts) + 1, 0);
  size_t peer_slices = 0;
  for (int d = 0; d < 2; ++d)
    for (int p = 0; p < parts; ++p) {
      const size_t at = static_cast<size_t>(d * parts + p);
      item_base[at + 1] = item_base[at] + slices_of(p);
      peer_slices += slices_of(p) * (d == 0 ? place[p].children.size() : place[p].parent >= 0);
    }
  const size_t n_items = item_base.back();
  std::vector<Message> messages;
  messages.reserve(peer_slices);
  size_t slots = 0;
  for (int p = 0; p < parts; ++p)
    for (size_t j = 0; j < slices_of(p); ++j) {
      const size_t count = piece_of(p, j).count();
      for (int child : place[p].children) {
        messages.push_back({key_of(child, false, p, j), child, slots, nullptr});
        slots += count;
      }
      if (place[p].parent >= 0) {
        messages.push_back({key_of(place[p].parent, true, p, j), place[p].parent, slots, nullptr});
        slots += count;
      }
    }
  std::sort(messages.begin(), messages.end(), [](const Message& a, const Message& b) {
    return a.from != b.from ? a.from < b.from : a.key < b.key;
  });
  const Buffer incoming = Buffer::like(data, data.dtype(), slots);
  auto item_of = [&](const Key& k) {
    return item_base[static_cast<size_t>(k.down * parts + k.part)] + k.slice;
  };
  // of_item[of_item_begin[i] .. of_item_begin[i + 1]): the messages item i takes in, in `messages`
  // order.
  std::vector<size_t> of_item_begin(n_items + 1, 0);
  for (const Message& m : messages)
    ++of_item_begin[item_of(m.key) + 1];
  for (size_t i = 0; i < n_items; ++i)
    of_item_begin[i + 1] += of_item_begin[i];
  std::vector<Message*> of_item(messages.size());
  std::vector<size_t> fill(of_item_begin.begin(), of_item_begin.end() - 1);
  for (Message& m : messages) {
    m.request = wire.irecv(incoming.view().slice(m.slot, piece_of(m.key.part, m.key.slice).count()),
                           m.from, tag);
    of_item[fill[item_of(m.key)]++] = &m;
  }

  // This rank's items in key order.
  std::vector<Key> items;
  items.reserve(n_items);
  for (int p = 0; p < parts; ++p)
    for (size_t j = 0; j < slices_of(p); ++j) {
      items.push_back(key_of(me, false, p, j));
      items.push_back(key_of(me, true, p, j));
    }
  std::sort(items.begin(), items.end());
  for (const Key& item : items) {
    const int p = item.part;
    const BufferView piece = piece_of(p, item.slice);
    // The slice comes down over what went up: that send first completes.
    if (item.down && !to_parent[p].empty())
      to_parent[p].front().wait_for(static_cast<int64_t>(item.slice) + 1);
    const size_t i = item_of(item);
    for (size_t k = of_item_begin[i]; k < of_item_begin[i + 1]; ++k) {
      Message* m = of_item[k];
      m->request->wait();
      const BufferView got = incoming.view().slice(m->slot, piece.count());
      if (item.down) {
        copy(piece, got);
      } else {
        bagua::reduce(piece, got, op);
      }
    }
    if (!item.down) {
      if (!to_parent[p].empty()) to_parent[p].front().send(wire, piece, tag);
    } else {
      for (PeerWindow& w : to_children[p])
        w.send(wire, piece, tag);
    }
  }
  for (int p = 0; p < parts; ++p) {
    for (PeerWindow& w : to_parent[p])
      w.drain();
    for (PeerWindow& w : to_children[p])
      w.drain();
  }
}

}  // namespace bagua::collectives
