// NCCL's tuning model for an allreduce with the Simple protocol (src/graph/tuning.cc:
// ncclTopoTuneModel fills latencies and bandwidths, ncclTopoGetAlgoTime adds them; src/enqueue.cc
// topoGetAlgoInfo picks the channel count), each factor a named constant citing its source; and the
// allreduce and allgather NCCL runs by it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "core/check.h"
#include "core/collectives/nccl.h"
#include "core/operation.h"

namespace bagua::collectives {

namespace {

// ---- Constants of src/graph/tuning.cc (ncclTunerConstantsDefaults), Simple protocol, in us --------
constexpr double kBaseLatencyUs = 8.4;        // baseLatencies[Tree][Simple] = [Ring][Simple]
constexpr double kTreeNvlinkLatencyUs = 4.0;  // hwLatencies[NVLINK][Tree][Simple]
constexpr double kRingNvlinkLatencyUs = 3.4;  // hwLatencies[NVLINK][Ring][Simple]
constexpr double kTreePciLatencyUs = 4.0;     // hwLatencies[PCI][Tree][Simple]
constexpr double kRingPciLatencyUs = 5.7;     // hwLatencies[PCI][Ring][Simple]
constexpr double kTreeNetLatencyUs = 14.0;    // hwLatencies[NET][Tree][Simple]
constexpr double kRingNetLatencyUs = 14.0;    // hwLatencies[NET][Ring][Simple]
// getNetOverhead: 1 us on x86 Intel (and by default), times 3 for Simple (ncclTopoTuneModel).
constexpr double kNetOverheadUs = 1.0;
constexpr double kSimpleNetOverheadFactor = 3.0;
// "Plateau effect of ring" (ncclTopoGetAlgoTime): ring Simple latency x 1.9 below SM 8.0, x 1.4 from
// it, on more than one node when bytes / (nChannels x nRanks) >= 64.
constexpr double kRingPlateauVolta = 1.9;
constexpr double kRingPlateau = 1.4;
constexpr int64_t kRingPlateauBytes = 64;
// Tree allreduce: busBw x .92, at most nChannels x perChMaxTreeBws[compCap][min(nNodes, 3) - 1];
// then x .5 into an algorithm bandwidth (ncclTopoTuneModel).
constexpr double kTreeBusFactor = 0.92;
constexpr double kTreeAlgoRatio = 0.5;
// perChMaxTreeBws in GB/s: Volta, Ampere, Hopper, Blackwell x (N1, N2, N4).
constexpr double kPerChannelMaxTreeBw[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
// treeCorrectionFactor[Simple][log2(bytes / 64)] for 64 B .. 256 MiB (ncclTopoGetAlgoTime).
constexpr double kTreeCorrection[24] = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
                                        .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9};
constexpr int kTreeCorrectionSizes = 23;  // applied for log sizes 0 .. 22
// Channel tuning (src/enqueue.cc topoGetAlgoInfo): NCCL_SIMPLE_THREAD_THRESHOLD 64
// (src/include/comm.h); threads NCCL_SIMPLE_MAX_NTHREADS 512 (src/include/device.h), or 256 for a
// ring whose intra-node bandwidth is at most PCI_BW = 12 GB/s (src/graph/topo.h, ncclTopoTuneModel).
constexpr int64_t kSimpleThreadThreshold = 64;
constexpr int kSimpleMaxThreads = 512;
constexpr int kSimplePciThreads = 256;
constexpr double kPciBwGBs = 12.0;  // PCI_BW (src/graph/topo.h)
constexpr double kNetBwGBs = 12.0;  // NET_BW (src/graph/topo.h)

double gigabytes_per_second(Bandwidth b) {
  return b.bytes_per_second() / 1e9;
}

int log2i(int64_t n) {  // floor(log2 n), -1 for n < 1 (NCCL's log2i)
  int l = -1;
  while (n > 0) {
    n >>= 1;
    ++l;
  }
  return l;
}

int compcap_index(int compute_capability) {
  return compute_capability >= 100  ? 3
         : compute_capability >= 90 ? 2
         : compute_capability >= 80 ? 1
                                    : 0;
}

// The bus bandwidth of all channels: the intra-node links on one node; across nodes a ring or tree
// also crosses the network, the slower of the two (NCCL's search bounds a multi-node graph's
// per-channel speed by the NIC).
double bus_bandwidth_gbs(const NcclTopology& topo) {
  const double intra = gigabytes_per_second(topo.intra_bandwidth);
  if (topo.nodes == 1) return intra;
  return std::min(intra, gigabytes_per_second(topo.inter_bandwidth));
}

void check(const NcclTopology& topo) {
  BAGUA_CHECK(topo.nodes >= 1 && topo.ranks >= topo.nodes && topo.max_channels >= 1,
              "NcclTopology: " + std::to_string(topo.nodes) + " nodes, " + std::to_string(topo.ranks) +
                  " ranks, " + std::to_string(topo.max_channels) + " channels");
}

}  // namespace

std::string to_string(NcclAlgo algo) {
  return algo == NcclAlgo::kRing ? "ring" : "tree";
}

NcclTopology nccl_topology(const Transport& transport, int max_channels) {
  const HostLayout layout = host_layout(transport);
  NcclTopology topo;
  topo.nodes = static_cast<int>(layout.hosts.size());
  topo.ranks = transport.size();
  topo.max_channels = max_channels;
  if (const std::optional<LinkHint> hint = transport.link_hint()) {
    topo.intra_bandwidth = hint->intra_host;
    topo.inter_bandwidth = hint->inter_host;
    topo.inter_latency = hint->inter_host_latency;
    // An intra-node link faster than PCI_BW is taken for NVLink.
    topo.nvlink = gigabytes_per_second(hint->intra_host) > kPciBwGBs;
  } else {
    topo.intra_bandwidth = Bandwidth::gigabytes_per_second(kPciBwGBs);
    topo.inter_bandwidth = Bandwidth::gigabytes_per_second(kNetBwGBs);
    topo.nvlink = false;
  }
  return topo;
}

double nccl_latency_us(const NcclTopology& topo, NcclAlgo algo, Bytes bytes) {
  check(topo);
  const int ranks = topo.ranks;
  const int nodes = topo.nodes;
  if (ranks <= 1) return 0;
  // graphs[a]->latencyInter (the network's reported latency) is added twice for Simple: once, and
  // once more for the flush.
  const double added = 2 * topo.inter_latency.microseconds();
  if (algo == NcclAlgo::kRing) {
    const int steps = 2 * (ranks - 1);  // nsteps of an allreduce
    double intra = topo.nvlink ? kRingNvlinkLatencyUs : kRingPciLatencyUs;
    if (nodes > 1) intra = std::max(intra, kNetOverheadUs * kSimpleNetOverheadFactor);
    const double ppn = static_cast<double>(ranks) / nodes;
    const double inter = (ppn == 1 ? kTreeNetLatencyUs : kRingNetLatencyUs) + added;
    const int inter_steps = nodes == 1 ? 0 : 2 * (nodes - 1);
    double latency = kBaseLatencyUs + (steps - inter_steps) * intra + inter_steps * inter;
    if (nodes > 1 && bytes.count() / (int64_t{topo.max_channels} * ranks) >= kRingPlateauBytes)
      latency *= topo.compute_capability < 80 ? kRingPlateauVolta : kRingPlateau;
    return latency;
  }
  const double intra = topo.nvlink ? kTreeNvlinkLatencyUs : kTreePciLatencyUs;
  const double inter = kTreeNetLatencyUs + added;
  return kBaseLatencyUs + 2 * ((ranks / nodes - 1) * intra + log2i(nodes) * inter);
}

double nccl_bandwidth_gbs(const NcclTopology& topo, NcclAlgo algo, Bytes bytes) {
  check(topo);
  const int ranks = topo.ranks;
  if (ranks <= 1) return 0;
  const double bus = bus_bandwidth_gbs(topo);
  if (algo == NcclAlgo::kRing) return bus * ranks / (2.0 * (ranks - 1));  // busBw x nRanks / nsteps
  const int index2 = topo.nodes <= 2 ? topo.nodes - 1 : 2;
  const double cap =
      topo.max_channels * kPerChannelMaxTreeBw[compcap_index(topo.compute_capability)][index2];
  double algo_bw = std::min(bus * kTreeBusFactor, cap) * kTreeAlgoRatio;
  const int log_size = log2i(bytes.count() >> 6);
  if (log_size >= 0 && log_size < kTreeCorrectionSizes) algo_bw *= kTreeCorrection[log_size];
  return algo_bw;
}

double nccl_time_us(const NcclTopology& topo, NcclAlgo algo, Bytes bytes) {
  const double bandwidth = nccl_bandwidth_gbs(topo, algo, bytes);
  if (bandwidth <= 0) return 0;
  return nccl_latency_us(topo, algo, bytes) + static_cast<double>(bytes.count()) / (1000 * bandwidth);
}

int nccl_channels(const NcclTopology& topo, NcclAlgo algo, Bytes bytes) {
  check(topo);
  const bool pci_ring =
      algo == NcclAlgo::kRing && gigabytes_per_second(topo.intra_bandwidth) <= kPciBwGBs;
  const int64_t threads = pci_ring ? kSimplePciThreads : kSimpleMaxThreads;
  int channels = topo.max_channels;
  while (channels >= 2 && bytes.count() < channels * threads * kSimpleThreadThreshold)
    --channels;
  return channels;
}

NcclChoice nccl_choose(const NcclTopology& topo, Bytes bytes) {
  const double ring = nccl_time_us(topo, NcclAlgo::kRing, bytes);
  const double tree = nccl_time_us(topo, NcclAlgo::kTree, bytes);
  const NcclAlgo algo = tree < ring ? NcclAlgo::kTree : NcclAlgo::kRing;
  return {algo, nccl_channels(topo, algo, bytes), std::min(ring, tree)};
}

std::string describe(const NcclTopology& topo, Bytes bytes) {
  char line[256];
  std::string out;
  std::snprintf(line, sizeof line,
                "NCCL model (Simple): %d nodes, %d ranks, bus %.2f GB/s, %s intra, net latency "
                "%.1f us, SM %d, %d channels; allreduce of %lld B\n",
                topo.nodes, topo.ranks, bus_bandwidth_gbs(topo), topo.nvlink ? "NVLink" : "PCI",
                topo.inter_latency.microseconds(), topo.compute_capability, topo.max_channels,
                static_cast<long long>(bytes.count()));
  out += line;
  for (NcclAlgo algo : {NcclAlgo::kRing, NcclAlgo::kTree}) {
    std::snprintf(line, sizeof line,
                  "  %-4s latency %10.1f us  bandwidth %8.3f GB/s  time %12.1f us  channels %d\n",
                  to_string(algo).c_str(), nccl_latency_us(topo, algo, bytes),
                  nccl_bandwidth_gbs(topo, algo, bytes), nccl_time_us(topo, algo, bytes),
                  nccl_channels(topo, algo, bytes));
    out += line;
  }
  const NcclChoice choice = nccl_choose(topo, bytes);
  out += "  choice: " + to_string(choice.algo) + " on " + std::to_string(choice.channels) +
         " channel(s)\n";
  return out;
}

void nccl_allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag) {
  const OperationScope scope("nccl allreduce");
  if (transport.size() == 1 || data.count() == 0) return;
  const NcclChoice choice = nccl_choose(nccl_topology(transport), data.bytes());
  PipelineOptions options;
  options.channels = choice.channels;
  if (choice.algo == NcclAlgo::kRing) {
    pipelined_ring_allreduce(transport, data, op, tag, options);
  } else {
    // runTreeUpDown moves single-step slices: ProtoSimple<1, 1> (src/device/all_reduce.h).
    options.slice_steps = 1;
    double_tree_allreduce(transport, data, op, tag, options);
  }
}

void nccl_allgather(Transport& transport, const BufferView& data, Tag tag) {
  const OperationScope scope("nccl allgather");
  if (transport.size() == 1 || data.count() == 0) return;
  PipelineOptions options;
  options.slice_steps = kAllgatherSliceSteps;
  options.channels = nccl_channels(nccl_topology(transport), NcclAlgo::kRing, data.bytes());
  pipelined_allgather(transport, data, tag, options);
}

}  // namespace bagua::collectives
