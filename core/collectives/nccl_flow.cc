// NCCL's collectives at flow granularity (core/collectives/nccl_flow.h has the derivation).
#include "core/collectives/nccl_flow.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/operation.h"

namespace bagua::collectives {

std::string to_string(CollectiveGranularity g) {
  return g == CollectiveGranularity::kFlow ? "flow" : "slice";
}

FlowCapable* flow_granularity(Transport& transport, const BufferView& data) {
  if (!data.is_meta()) return nullptr;
  auto* flow = dynamic_cast<FlowCapable*>(&transport);
  if (flow == nullptr || flow->collective_granularity() != CollectiveGranularity::kFlow) return nullptr;
  return flow;
}

namespace {

// A hop of each kind: alpha (an empty message), its transmission time per byte alone (`ns_per_byte`),
// and while k streams leave the rank at once, each at 1 / k of the rate: on the chain k = the streams
// whose first slices go out together (the ring's channels; one for the tree, whose parts arrive
// apart), on the window k = every peer stream of the rank (the ring's channels; the tree's parent and
// children). `ordered`: the transport moves one peer's messages one after another (a stream), so
// that slices sent together do not share the link but follow one another (nccl_flow.h, "Ordered").
struct Hop {
  Time alpha;
  double ns_per_byte = 0;
  double chain_ns_per_byte = 0;
  double window_ns_per_byte = 0;
  bool ordered = false;
  static Time at(double ns_per_byte, Bytes bytes) {
    return Time::ns(std::llround(static_cast<double>(bytes.count()) * ns_per_byte));
  }
  Time transmit(Bytes bytes) const { return at(ns_per_byte, bytes); }
  Time chain_transmit(Bytes bytes) const { return at(chain_ns_per_byte, bytes); }
  Time window_transmit(Bytes bytes) const { return at(window_ns_per_byte, bytes); }
  // What each slice to one peer adds to its stream's time (window_transmit) while the window of W
  // slices in flight binds. Shared links (not ordered): alpha / W always. The W slices in flight
  // share the link max-min, so the ones sent together land together, free their slots together and
  // the next W go out together, every alpha + W tau: the sends stay in bursts once they are (a run
  // of calls back to back, nccl_flow.h, "The window"). Ordered: the window slides; the oldest slice
  // frees its slot alpha + tau1 after it was sent (tau1: one slice alone on the hop), so W slices
  // take at least alpha + tau1, and each adds (alpha + tau1) / W less its stream time, if positive.
  Time window_latency(Bytes slice, int in_flight) const {
    if (!ordered) return Time::ns(alpha.nanoseconds() / in_flight);
    const Time per_slice = Time::ns((alpha + transmit(slice)).nanoseconds() / in_flight);
    return std::max(Time::zero(), per_slice - window_transmit(slice));
  }
};

// The slicing of one chunk (the bytes of one step, per channel): its n slices, its first m = min(n, W)
// (the burst: sent at once, they share the link and land together), the rest, and the bytes to
// one peer over the whole call.
struct Slicing {
  Bytes slice;
  Bytes burst;
  Bytes rest;
  int64_t slices = 1;  // n
  int64_t m = 1;
};
// The bytes `elements` elements of `element` bytes put on the wire in messages of `slice` elements
// (the last shorter) under `protocol` (nccl.h wire_bytes; Simple: the elements' bytes).
Bytes on_wire(NcclProtocol protocol, size_t elements, size_t slice, size_t element) {
  const size_t whole = elements / slice;
  return wire_bytes(protocol, Bytes(static_cast<int64_t>(slice * element))) *
             static_cast<int64_t>(whole) +
         wire_bytes(protocol, Bytes(static_cast<int64_t>((elements - whole * slice) * element)));
}

Slicing slicing(size_t chunk_elements, size_t slice_elements, size_t element, int in_flight,
                NcclProtocol protocol) {
  Slicing s;
  const size_t slice = std::max<size_t>(1, std::min(slice_elements, chunk_elements));
  s.slices = static_cast<int64_t>(std::max<size_t>(1, (chunk_elements + slice - 1) / slice));
  s.m = std::min<int64_t>(s.slices, in_flight);
  const size_t burst = std::min(chunk_elements, slice * static_cast<size_t>(s.m));
  s.slice = on_wire(protocol, slice, slice, element);
  s.burst = on_wire(protocol, burst, slice, element);
  s.rest = on_wire(protocol, chunk_elements - burst, slice, element);
  return s;
}

struct HopCosts {
  Hop intra;  // a hop within a host
  Hop inter;  // a hop between hosts
  bool has_intra = false;
  bool has_inter = false;

  // The chain's hop on the ring and the chain: alpha + the burst, which lands together on shared
  // links; on an ordered stream the first slice alone (the burst's others follow it).
  static Time chain_hop(const Hop& h, const Slicing& s) {
    return h.alpha + (h.ordered ? h.transmit(s.slice) : h.chain_transmit(s.burst));
  }
  // The tree's hop: alpha + one slice alone, whatever the transport: the tree forwards slice by
  // slice (double_tree.cc, each item waits for its own receives), not in bursts.
  static Time tree_hop(const Hop& h, const Slicing& s) { return h.alpha + h.transmit(s.slice); }
  // Of the slower kind: the last step's slices after the burst (ordered: every slice of the step but
  // the first, at the stream's rate), and the window term for `slices_to_peer` slices of
  // `bytes_to_peer` bytes in all.
  Time tail(const Slicing& s, int in_flight) const {
    return slower([&](const Hop& h) {
      if (h.ordered)
        return h.window_latency(s.slice, in_flight) * (s.slices - 1) +
               h.window_transmit(s.burst + s.rest) - h.transmit(s.slice);
      return h.window_latency(s.slice, in_flight) * (s.slices - s.m) + h.window_transmit(s.rest);
    });
  }
  // The tree's: after the first slice's way, the part's n slices through the rank's busiest hop, each
  // at its share (window_transmit) and window latency, less the first slice's own time there, which
  // the way counted alone: a pipeline of stages takes the sum of the stages plus (n - 1) of the
  // slowest.
  Time tree_tail(const Slicing& s, int in_flight) const {
    return slower([&](const Hop& h) {
      return h.window_latency(s.slice, in_flight) * s.slices + h.window_transmit(s.burst + s.rest) -
             h.transmit(s.slice);
    });
  }
  Time window(const Slicing& s, int in_flight, int64_t slices_to_peer, Bytes bytes_to_peer) const {
    return slower([&](const Hop& h) {
      return h.window_latency(s.slice, in_flight) * slices_to_peer + h.window_transmit(bytes_to_peer);
    });
  }
  template <class F>
  Time slower(F f) const {
    Time t;
    if (has_intra) t = std::max(t, f(intra));
    if (has_inter) t = std::max(t, f(inter));
    return t;
  }
};

struct Sharing {
  int chain = 1;
  int window = 1;
};

// The rate is probed with one GiB, so that the transport's rounding to whole nanoseconds is lost in
// it (1 GiB at 12.5 bytes per ns: 85'899'346 ns for 85'899'345.92).
constexpr int64_t kProbeBytes = int64_t{1} << 30;

// `step`: the protocol's step latency on this kind of hop (PipelineOptions::step_latency), which
// every message pays before it leaves: alpha's, in the chain and in the window alike.
Hop hop_cost(FlowCapable& flow, int src, int dst, Sharing sharing, Time step) {
  const Time empty = flow.transfer_time(src, dst, Bytes(0));
  const Time alpha = empty + step;
  const double per_byte =
      static_cast<double>((flow.transfer_time(src, dst, Bytes(kProbeBytes)) - empty).nanoseconds()) /
      static_cast<double>(kProbeBytes);
  return {alpha, per_byte, per_byte * sharing.chain, per_byte * sharing.window, flow.ordered_streams()};
}

// The costs of the first pair of each kind among `pairs` (src, dst).
template <class Pairs>
HopCosts hop_costs(FlowCapable& flow, const Transport& transport, const Pairs& pairs, const Slicing& s,
                   Sharing sharing, const StepLatency& step) {
  HopCosts costs;
  for (const auto& [src, dst] : pairs) {
    const bool between = transport.host_of(src) != transport.host_of(dst);
    if (between && !costs.has_inter) {
      costs.inter = hop_cost(flow, src, dst, sharing, step.inter);
      costs.has_inter = true;
    } else if (!between && !costs.has_intra) {
      costs.intra = hop_cost(flow, src, dst, sharing, step.intra);
      costs.has_intra = true;
    }
    if (costs.has_intra && costs.has_inter) break;
  }
  return costs;
}

// The ring's hops i -> i + 1 as (src, dst) pairs, lazily.
struct RingPairs {
  int ranks;
  struct Iterator {
    int i;
    int ranks;
    std::pair<int, int> operator*() const { return {i, mod(i + 1, ranks)}; }
    Iterator& operator++() {
      ++i;
      return *this;
    }
    bool operator!=(const Iterator& o) const { return i != o.i; }
  };
  Iterator begin() const { return {0, ranks}; }
  Iterator end() const { return {ranks, ranks}; }
};

// The cost of the `hops` ring hops ending at rank `end` (hop i is i -> i + 1): full rounds, then the
// rest, each hop costed by its kind.
Time ring_chain(const Transport& transport, Time intra, Time inter, int64_t hops, int end) {
  const int ranks = transport.size();
  auto cost_of = [&](int i) {
    return transport.host_of(i) != transport.host_of(mod(i + 1, ranks)) ? inter : intra;
  };
  Time round;
  for (int i = 0; i < ranks; ++i)
    round = round + cost_of(i);
  Time chain = round * (hops / ranks);
  for (int64_t k = 1; k <= hops % ranks; ++k)
    chain = chain + cost_of(mod(end - static_cast<int>(k), ranks));
  return chain;
}

// Per channel, `send[c]` elements to `right` and `recv[c]` from `left` (0: none), all posted at once,
// each as the bytes its slices put on the wire; then the pipeline `term` waited for alongside them.
void exchange(FlowCapable& flow, Transport& transport, const BufferView& data, Tag tag, int right,
              int left, const std::vector<size_t>& send, const std::vector<size_t>& recv, Time term,
              const PipelineOptions& options) {
  const size_t element = size_of(data.dtype());
  const size_t slice = options.slice_elements(element);
  auto wire = [&](size_t elements) {
    return static_cast<size_t>(on_wire(options.protocol, elements, slice, element).count());
  };
  size_t most = 1;
  for (size_t c = 0; c < send.size(); ++c)
    most = std::max({most, wire(send[c]), wire(recv[c])});
  const Buffer scratch = Buffer::like(data, DType::kU8, most);
  std::vector<RequestPtr> requests;
  for (size_t c = 0; c < send.size(); ++c) {
    if (recv[c] > 0)
      requests.push_back(transport.irecv(scratch.view().slice(0, wire(recv[c])), left, tag));
    if (send[c] > 0)
      requests.push_back(transport.isend(scratch.view().slice(0, wire(send[c])), right, tag));
  }
  flow.start_together(tag);
  if (term > Time::zero()) flow.pause(term);
  wait_all(requests);
}

enum class RingKind { kReduceScatter, kAllgather, kAllreduce };

// The ring collectives: per channel part of `part` elements cut into P chunks, the rank sends every
// chunk but its own (reduce-scatter) and every chunk but its right neighbour's (allgather), as
// pipelined_ring.cc's steps do.
void flow_ring(FlowCapable& flow, Transport& transport, const BufferView& data, Tag tag,
               const PipelineOptions& options, RingKind kind) {
  const int ranks = transport.size();
  const int rank = transport.rank();
  const int right = mod(rank + 1, ranks);
  const int left = mod(rank - 1, ranks);
  const int channels = options.channels;
  const Chunking parts(data, channels);
  auto sent_by = [&](int who, size_t part) {
    const size_t own = chunk_range(part, ranks, who).count;
    const size_t next = chunk_range(part, ranks, mod(who + 1, ranks)).count;
    switch (kind) {
      case RingKind::kReduceScatter:
        return part - own;
      case RingKind::kAllgather:
        return part - next;
      case RingKind::kAllreduce:
        return 2 * part - own - next;
    }
    return size_t{0};
  };
  std::vector<size_t> send;
  std::vector<size_t> recv;
  for (int c = 0; c < channels; ++c) {
    const size_t part = parts.chunk(c).count();
    send.push_back(sent_by(rank, part));
    recv.push_back(sent_by(left, part));
  }
  const size_t element = size_of(data.dtype());
  const int in_flight = options.slices_in_flight();
  const size_t chunk = (parts.max_count() + ranks - 1) / static_cast<size_t>(ranks);
  const Slicing s =
      slicing(chunk, options.slice_elements(element), element, in_flight, options.protocol);
  const int64_t hops = kind == RingKind::kAllreduce ? 2 * (ranks - 1) : ranks - 1;
  const HopCosts costs =
      hop_costs(flow, transport, RingPairs{ranks}, s, {channels, channels}, options.step_latency);
  const Time chain_hops = ring_chain(transport, HopCosts::chain_hop(costs.intra, s),
                                     HopCosts::chain_hop(costs.inter, s), hops, rank);
  const Time chain = chain_hops + costs.tail(s, in_flight);
  const Bytes chunk_bytes = s.burst + s.rest;
  const Time window = costs.window(s, in_flight, hops * s.slices, chunk_bytes * hops);
  exchange(flow, transport, data, tag, right, left, send, recv, std::max(chain, window), options);
}

// Broadcast and reduce: a chain of P - 1 hops from position 0 to position P - 1 (position p = rank -
// first); every rank but the last sends each channel's whole part to its right, slice by slice.
void flow_chain(FlowCapable& flow, Transport& transport, const BufferView& data, int first, Tag tag,
                const PipelineOptions& options) {
  const int ranks = transport.size();
  const int rank = transport.rank();
  const int position = mod(rank - first, ranks);
  const Chunking parts(data, options.channels);
  std::vector<size_t> send;
  std::vector<size_t> recv;
  for (int c = 0; c < options.channels; ++c) {
    const size_t part = parts.chunk(c).count();
    send.push_back(position < ranks - 1 ? part : 0);
    recv.push_back(position > 0 ? part : 0);
  }
  const size_t element = size_of(data.dtype());
  const int in_flight = options.slices_in_flight();
  const Slicing s =
      slicing(parts.max_count(), options.slice_elements(element), element, in_flight, options.protocol);
  const HopCosts costs = hop_costs(flow, transport, RingPairs{ranks}, s,
                                   {options.channels, options.channels}, options.step_latency);
  // The hops from position 0 to this rank's position (the last rank's is the whole chain).
  const Time chain_hops = ring_chain(transport, HopCosts::chain_hop(costs.intra, s),
                                     HopCosts::chain_hop(costs.inter, s), position, rank);
  const Time chain = chain_hops + costs.tail(s, in_flight);
  const Time window = costs.window(s, in_flight, s.slices, s.burst + s.rest);
  exchange(flow, transport, data, tag, mod(rank + 1, ranks), mod(rank - 1, ranks), send, recv,
           position == 0 ? window : std::max(chain, window), options);
}

}  // namespace

void flow_reduce_scatter(FlowCapable& flow, Transport& transport, const BufferView& data, Tag tag,
                         const PipelineOptions& options) {
  flow_ring(flow, transport, data, tag, options, RingKind::kReduceScatter);
}

void flow_allgather(FlowCapable& flow, Transport& transport, const BufferView& data, Tag tag,
                    const PipelineOptions& options) {
  flow_ring(flow, transport, data, tag, options, RingKind::kAllgather);
}

void flow_ring_allreduce(FlowCapable& flow, Transport& transport, const BufferView& data, Tag tag,
                         const PipelineOptions& options) {
  flow_ring(flow, transport, data, tag, options, RingKind::kAllreduce);
}

void flow_broadcast(FlowCapable& flow, Transport& transport, const BufferView& data, int root, Tag tag,
                    const PipelineOptions& options) {
  flow_chain(flow, transport, data, root, tag, options);
}

void flow_reduce(FlowCapable& flow, Transport& transport, const BufferView& data, int root, Tag tag,
                 const PipelineOptions& options) {
  flow_chain(flow, transport, data, mod(root + 1, transport.size()), tag, options);
}

namespace {

// What the flow tree needs of the hosts' two trees (ncclGetDtree over `nodes` hosts): each tree's
// deepest path (hops from a host to the root) and the host with the most peers over both trees (the
// first of them). A function of `nodes` alone, so the last answer is kept per thread: every rank of a
// call, and every call of a run, asks for the same one (O(nodes log nodes) to compute).
struct HostTrees {
  int nodes = -1;
  int depth[2] = {0, 0};
  int busiest = 0;
};

const HostTrees& host_trees(int nodes) {
  thread_local HostTrees last;
  if (last.nodes == nodes) return last;
  HostTrees t;
  t.nodes = nodes;
  int most = -1;
  for (int node = 0; node < nodes; ++node) {
    int peers = 0;
    for (int tree = 0; tree < 2; ++tree) {
      const NodeLinks links = dtree_links(nodes, node, tree);
      peers += (links.parent >= 0) + (links.child0 >= 0) + (links.child1 >= 0);
      int depth = 0;
      for (int at = node; dtree_links(nodes, at, tree).parent >= 0; at = dtree_links(nodes, at, tree).parent)
        ++depth;
      t.depth[tree] = std::max(t.depth[tree], depth);
    }
    if (peers > most) {
      most = peers;
      t.busiest = node;
    }
  }
  last = t;
  return last;
}

// The tree's window rates: every stream of the busiest host at once (each rank's parent and children
// in both trees, `parts_per_tree` parts each), each link's capacity shared evenly among those on it
// (FlowCapable::sharing_factors), the slowest stream of each kind setting its hop's. The busiest host
// has the most peers on other hosts over both trees (the first of them): an inner host of a tree has
// three, its parent and two children, and in the other tree is a leaf, one. On hosts of one NIC its
// two heads' four streams share the NIC; on a NIC per rank (a rail-optimized DGX) the inner head's
// three share its NIC.
void tree_shares(FlowCapable& flow, const Transport& transport, const HostLayout& layout,
                 int parts_per_tree, HopCosts& costs) {
  const int busiest = host_trees(static_cast<int>(layout.hosts.size())).busiest;
  std::vector<std::pair<int, int>> streams;
  for (const int rank : layout.hosts[static_cast<size_t>(busiest)])
    for (int tree = 0; tree < 2; ++tree) {
      const TreePlace place = double_tree_place(layout, rank, tree);
      if (place.parent >= 0) streams.emplace_back(rank, place.parent);
      for (const int child : place.children)
        streams.emplace_back(rank, child);
    }
  double intra = 1;
  double inter = 1;
  const std::vector<double> factors = flow.sharing_factors(streams);
  for (size_t i = 0; i < streams.size(); ++i) {
    const bool between = transport.host_of(streams[i].first) != transport.host_of(streams[i].second);
    (between ? inter : intra) = std::max(between ? inter : intra, factors[i]);
  }
  costs.intra.window_ns_per_byte = costs.intra.ns_per_byte * intra * parts_per_tree;
  costs.inter.window_ns_per_byte = costs.inter.ns_per_byte * inter * parts_per_tree;
}

}  // namespace

void flow_double_tree_allreduce(FlowCapable& flow, Transport& transport, const BufferView& data,
                                Tag tag, const PipelineOptions& options) {
  // Part p goes up tree p mod 2 and back down it: a rank sends the part to its parent and to each
  // child, and receives it from each child and from its parent, per part, every transfer posted at
  // once in part order (the same order on both sides of every pair). The chain: slice 0 up the
  // deepest path of its tree (hosts' chains of ranks, then the hosts' binary tree) and down to this
  // rank; the window: the part's slices to one peer.
  const int me = transport.rank();
  const HostLayout layout = host_layout(transport);
  const int parts = 2 * std::max(1, options.channels / 2);
  const Chunking chunking(data, parts);
  const size_t element = size_of(data.dtype());
  const int in_flight = options.slices_in_flight();
  const Slicing s = slicing(chunking.max_count(), options.slice_elements(element), element, in_flight,
                            options.protocol);
  const int nodes = static_cast<int>(layout.hosts.size());
  std::vector<std::pair<int, int>> pairs;
  if (layout.hosts[0].size() > 1) pairs.emplace_back(layout.hosts[0][0], layout.hosts[0][1]);
  if (nodes > 1) pairs.emplace_back(layout.hosts[0][0], layout.hosts[1][0]);
  HopCosts costs = hop_costs(flow, transport, pairs, s, {1, 1}, options.step_latency);
  tree_shares(flow, transport, layout, parts / 2, costs);
  size_t most_ranks_per_host = 0;
  for (const std::vector<int>& host : layout.hosts)
    most_ranks_per_host = std::max(most_ranks_per_host, host.size());

  Time longest_wait;
  std::vector<RequestPtr> requests;
  const size_t slice = options.slice_elements(element);
  auto wire = [&](size_t elements) {
    return static_cast<size_t>(on_wire(options.protocol, elements, slice, element).count());
  };
  const Buffer scratch =
      Buffer::like(data, DType::kU8, std::max<size_t>(wire(chunking.max_count()), 1));
  for (int p = 0; p < parts; ++p) {
    const int tree = p % 2;
    const size_t count = chunking.chunk(p).count();
    const BufferView piece = scratch.view().slice(0, wire(count));
    const TreePlace place = double_tree_place(layout, me, tree);
    // Up: from the children, to the parent; down: from the parent, to the children.
    if (count > 0) {
      for (int child : place.children)
        requests.push_back(transport.irecv(piece, child, tag));
      if (place.parent >= 0) requests.push_back(transport.isend(piece, place.parent, tag));
      if (place.parent >= 0) requests.push_back(transport.irecv(piece, place.parent, tag));
      for (int child : place.children)
        requests.push_back(transport.isend(piece, child, tag));
    }
    // The deepest path up: a host's chain below its head, then the hosts' tree to its root.
    const int host_depth = host_trees(nodes).depth[tree];
    const int64_t up_intra = static_cast<int64_t>(most_ranks_per_host) - 1;
    // Down to this rank: its own path to the root.
    int64_t down_intra = 0;
    int64_t down_inter = 0;
    for (int at = me;;) {
      const int parent = double_tree_place(layout, at, tree).parent;
      if (parent < 0) break;
      (transport.host_of(parent) == transport.host_of(at) ? down_intra : down_inter) += 1;
      at = parent;
    }
    const Time chain = HopCosts::tree_hop(costs.intra, s) * (up_intra + down_intra) +
                       HopCosts::tree_hop(costs.inter, s) * (host_depth + down_inter) +
                       costs.tree_tail(s, in_flight);
    // The window of one peer: the part's slices, W at a time.
    const Time window = costs.window(s, in_flight, s.slices, s.burst + s.rest);
    longest_wait = std::max({longest_wait, chain, window});
  }
  flow.start_together(tag);
  if (longest_wait > Time::zero()) flow.pause(longest_wait);
  wait_all(requests);
}

}  // namespace bagua::collectives
