// All-to-all personalized exchange: pairwise exchange, and the grouped form NCCL runs.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/collectives/collectives.h"
#include "core/collectives/nccl.h"
#include "core/operation.h"
#include "core/ops.h"

namespace bagua::collectives {

namespace {

constexpr AlltoallAlgo kAlltoallAlgos[] = {AlltoallAlgo::kPairwise, AlltoallAlgo::kNccl};

// NCCL_MAX_DEV_WORK_P2P_PER_BATCH (src/include/device.h): p2p operations one channel runs at once.
constexpr int kNcclP2pPerBatch = 8;
// ncclTopoGetNchannels (src/graph/paths.cc): a network peer's channels, nNetChannels = 2, before the
// NIC count and bandwidth may raise it (not modelled: one NIC per host here).
constexpr int kNcclChannelsPerNetPeer = 2;

// NCCL's pow2Up: the least power of two >= n (n >= 1).
int pow2_up(int n) { return static_cast<int>(std::bit_ceil(static_cast<unsigned>(n))); }

// The checks every alltoall makes; returns false when there is nothing to move.
bool check_buffers(const char* who, const BufferView& send, const BufferView& recv, int ranks,
                   int rank) {
  if (send.dtype() != recv.dtype() || send.count() != recv.count())
    throw ConfigError(std::string(who) + ": send is " + std::to_string(send.count()) + " x " +
                      to_string(send.dtype()) + " but recv is " + std::to_string(recv.count()) + " x " +
                      to_string(recv.dtype()) + " (rank " + std::to_string(rank) + ")");
  if (send.count() % static_cast<size_t>(ranks) != 0)
    throw ConfigError(std::string(who) + ": count " + std::to_string(send.count()) +
                      " is not divisible by the " + std::to_string(ranks) + " ranks (rank " +
                      std::to_string(rank) + ")");
  if (send.count() == 0) return false;
  if (!send.is_meta() && !recv.is_meta()) {
    const auto send_begin = reinterpret_cast<uintptr_t>(send.data());
    const auto recv_begin = reinterpret_cast<uintptr_t>(recv.data());
    const auto bytes = static_cast<uintptr_t>(send.bytes().count());
    if (send_begin < recv_begin + bytes && recv_begin < send_begin + bytes)
      throw ConfigError(std::string(who) + ": send and recv overlap (rank " + std::to_string(rank) +
                        ")");
  }
  return true;
}

}  // namespace

std::string to_string(AlltoallAlgo algo) {
  switch (algo) {
    case AlltoallAlgo::kPairwise:
      return "pairwise";
    case AlltoallAlgo::kNccl:
      return "nccl";
  }
  return "?";
}

std::vector<std::string> alltoall_algo_names() {
  std::vector<std::string> names;
  for (AlltoallAlgo a : kAlltoallAlgos)
    names.push_back(to_string(a));
  return names;
}

AlltoallAlgo parse_alltoall_algo(std::string_view name) {
  for (AlltoallAlgo a : kAlltoallAlgos)
    if (to_string(a) == name) return a;
  throw ConfigError("alltoall algorithm '" + std::string(name) +
                    "' is unknown (expected pairwise or nccl)");
}

std::vector<int> nccl_p2p_rounds(int ranks) {
  // p2pSchedule (src/init.cc) with one rank per node: delta := (delta + round) mod N' for round = 1,
  // 2, ..., N' = pow2Up(ranks) (the quadratic sequence 0, 1, 3, 6, 10, ..., a permutation of 0 .. N'
  // - 1 since N' is a power of two), kept where delta < ranks.
  std::vector<int> distances;
  const int n = pow2_up(std::max(ranks, 1));
  int delta = 0;
  for (int round = 1; round <= n; ++round) {
    if (delta != 0 && delta < ranks) distances.push_back(delta);
    delta = (delta + round) & (n - 1);
  }
  return distances;
}

int nccl_p2p_peers_per_wave(int ranks, int nodes, int channels) {
  if (channels < 1)
    throw ConfigError("nccl_p2p_peers_per_wave: channels must be >= 1, got " +
                      std::to_string(channels));
  // p2pnChannels = pow2Up(min(nChannels, NCCL_MAX_P2P_NCHANNELS)); MAXCHANNELS (64) is above any
  // channel count NCCL's tuner gives here.
  const int p2p_channels = pow2_up(channels);
  int per_peer = pow2_up(kNcclChannelsPerNetPeer);
  if (nodes > 1) {
    const int batches = (ranks + kNcclP2pPerBatch - 1) / kNcclP2pPerBatch;
    while (per_peer * batches > p2p_channels && per_peer > 1)
      per_peer /= 2;
  } else {
    per_peer = std::min(p2p_channels, per_peer);
  }
  return p2p_channels / per_peer * kNcclP2pPerBatch;
}

void alltoall(Transport& transport, const BufferView& send, const BufferView& recv, Tag tag,
              AlltoallAlgo algo) {
  if (algo == AlltoallAlgo::kNccl) {
    const NcclTopology topo = nccl_topology(transport);
    grouped_alltoall(transport, send, recv, tag,
                     nccl_p2p_peers_per_wave(topo.ranks, topo.nodes, topo.max_channels));
    return;
  }
  // Both buffers are cut into one `chunk` per rank; chunk i of `send` is for rank i, and chunk j of
  // `recv` is from rank j. A rank first copies its own chunk across; then in `step` s = 1 .. ranks - 1
  // it sends to `destination` rank + s the chunk meant for it, and receives from `source` rank - s into
  // that rank's slot. Every pair meets exactly once, in both directions.
  const OperationScope scope("alltoall");
  const int ranks = transport.size();
  const int rank = transport.rank();
  if (!check_buffers("alltoall", send, recv, ranks, rank)) return;
  const Chunking send_chunks(send, ranks);
  const Chunking recv_chunks(recv, ranks);
  copy(recv_chunks.chunk(rank), send_chunks.chunk(rank));
  for (int step = 1; step < ranks; ++step) {
    const int destination = mod(rank + step, ranks);
    const int source = mod(rank - step, ranks);
    transport.sendrecv(send_chunks.chunk(destination), destination, recv_chunks.chunk(source), source,
                       tag);
  }
}

void grouped_alltoall(Transport& transport, const BufferView& send, const BufferView& recv, Tag tag,
                      int peers_per_wave) {
  // The chunks as in the pairwise exchange. The ranks - 1 peers are taken in NCCL's order of
  // `rounds` (nccl_p2p_rounds): in round i a rank sends to `destination` rank + d_i and receives
  // from `source` rank - d_i. A `wave` is `peers_per_wave` consecutive rounds (all of them when 0):
  // its receives and sends are all posted, then all waited for, as the transfers of one batch of
  // NCCL's p2p kernel run concurrently; the next wave starts when the last one has completed.
  const OperationScope scope("grouped alltoall");
  const int ranks = transport.size();
  const int rank = transport.rank();
  if (peers_per_wave < 0)
    throw ConfigError("grouped alltoall: peers_per_wave must be >= 0, got " +
                      std::to_string(peers_per_wave));
  if (!check_buffers("grouped alltoall", send, recv, ranks, rank)) return;
  const Chunking send_chunks(send, ranks);
  const Chunking recv_chunks(recv, ranks);
  copy(recv_chunks.chunk(rank), send_chunks.chunk(rank));
  const std::vector<int> rounds = nccl_p2p_rounds(ranks);
  const size_t wave = peers_per_wave == 0 ? rounds.size() : static_cast<size_t>(peers_per_wave);
  for (size_t first = 0; first < rounds.size(); first += wave) {
    const size_t last = std::min(rounds.size(), first + wave);
    std::vector<RequestPtr> requests;
    requests.reserve(2 * (last - first));
    for (size_t i = first; i < last; ++i) {
      const int source = mod(rank - rounds[i], ranks);
      requests.push_back(transport.irecv(recv_chunks.chunk(source), source, tag));
    }
    for (size_t i = first; i < last; ++i) {
      const int destination = mod(rank + rounds[i], ranks);
      requests.push_back(transport.isend(send_chunks.chunk(destination), destination, tag));
    }
    wait_all(requests);
  }
}

}  // namespace bagua::collectives
