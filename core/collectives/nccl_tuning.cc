// NCCL's tuning model for an allreduce, ring and tree under LL, LL128 and Simple (NVIDIA/nccl
// v2.30.7-1, src/graph/tuning.cc: ncclTopoTuneModel fills latencies and bandwidths, ncclTopoGetAlgoTime
// adds them; src/enqueue.cc topoGetAlgoInfo picks the pair of least time and the channel count,
// calcCollChunking the chunk), each factor a named constant citing its source; and the allreduce and
// allgather NCCL runs by it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "core/check.h"
#include "core/collectives/nccl.h"
#include "core/operation.h"

namespace bagua::collectives {

namespace {

// ---- Constants of src/graph/tuning.cc (ncclTunerConstantsDefaults), in us and GB/s ---------------

// One figure per protocol, in NCCL's order (LL, LL128, Simple).
struct PerProtocol {
  double ll = 0;
  double ll128 = 0;
  double simple = 0;
  constexpr double operator[](NcclProtocol p) const {
    return p == NcclProtocol::kLL ? ll : p == NcclProtocol::kLL128 ? ll128 : simple;
  }
};
// baseLatencies[Tree], [Ring].
constexpr PerProtocol kTreeBaseLatencyUs{6.8, 14.0, 8.4};
constexpr PerProtocol kRingBaseLatencyUs{6.6, 14.0, 8.4};
// hwLatencies[NVLINK | PCI | NET][Tree | Ring].
constexpr PerProtocol kTreeNvlinkLatencyUs{.6, 1.25, 4.0};
constexpr PerProtocol kRingNvlinkLatencyUs{.6, 1.9, 3.4};
constexpr PerProtocol kTreePciLatencyUs{1.0, 1.9, 4.0};
constexpr PerProtocol kRingPciLatencyUs{1.0, 2.5, 5.7};
constexpr PerProtocol kTreeNetLatencyUs{5.0, 8.5, 14.0};
constexpr PerProtocol kRingNetLatencyUs{2.7, 4.0, 14.0};
// getNetOverhead: 1 us on x86 Intel (and by default), times 3 for Simple (ncclTopoTuneModel).
constexpr double kNetOverheadUs = 1.0;
constexpr double kSimpleNetOverheadFactor = 3.0;
// "Plateau effect of ring" (ncclTopoGetAlgoTime): ring Simple latency x 1.9 below SM 8.0, x 1.4 from
// it, on more than one node when bytes / (nChannels x nRanks) >= 64.
constexpr double kRingPlateauVolta = 1.9;
constexpr double kRingPlateau = 1.4;
constexpr int64_t kRingPlateauBytes = 64;
// Ring LL: busBw x .5, at most llMaxBw; ring LL128: busBw x .92 ("120.0/128.0"), at most nChannels x
// perChMaxRingLL128Bw (ncclTopoTuneModel, "Various model refinements").
constexpr double kRingLLBusFactor = 0.5;
constexpr double kRingLL128BusFactor = 0.92;
// Tree allreduce, every protocol: busBw x .92, at most nChannels x perChMaxTreeBws[compCap][min(
// nNodes, 3) - 1]; then LL: / 3.8, at most llMaxBw; LL128: x 7/9 on one node, x 120/128 on more, at
// most nChannels x perChMaxTreeLL128Bw; then x .5 into an algorithm bandwidth (ncclTopoTuneModel).
constexpr double kTreeBusFactor = 0.92;
constexpr double kTreeLLDivisor = 3.8;
constexpr double kTreeLL128OneNodeFactor = 7.0 / 9.0;
constexpr double kTreeLL128Factor = 120.0 / 128.0;
constexpr double kTreeAlgoRatio = 0.5;
// Rows: Volta, Ampere, Hopper, Blackwell; columns N1, N2, N4 (1, 2, more nodes).
// perChMaxTreeBws.
constexpr double kPerChannelMaxTreeBw[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
// perChMaxRingLL128Bws.
constexpr double kPerChannelMaxRingLL128Bw[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};
// perChMaxTreeLL128Bws.
constexpr double kPerChannelMaxTreeLL128Bw[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
// llMaxBws, whose row is the GPU's on one node and the CPU's across nodes ("for multi-node, we look
// at CPU type"): row 0 Volta or Intel, row 1 Ampere or AMD, 2 Hopper, 3 Blackwell. The model takes
// Intel CPUs, as getNetOverhead's 1 us does.
constexpr double kLLMaxBw[4][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}};
constexpr int kIntelCpuRow = 0;
// treeCorrectionFactor[protocol][log2(bytes / 64)] for 64 B .. 256 MiB (ncclTopoGetAlgoTime).
constexpr double kTreeCorrection[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6,  .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6,  .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};
constexpr int kTreeCorrectionSizes = 23;  // applied for log sizes 0 .. 22
// LL128's enable rule: SM 7.0 or newer (minCompCap < 70 disables it), and from SM 9.0 the NIC may be
// as far as PATH_PXN (ncclTopoTuneModel, NCCL_LL128_C2C = 1 by default).
constexpr int kLL128MinComputeCapability = 70;
constexpr int kLL128PxnComputeCapability = 90;
// Channel tuning (src/enqueue.cc topoGetAlgoInfo): threadThresholds NCCL_LL_THREAD_THRESHOLD 8 (times
// nRanks for the ring), NCCL_LL128_THREAD_THRESHOLD 8, NCCL_SIMPLE_THREAD_THRESHOLD 64
// (src/include/comm.h, ncclTopoTuneModel); maxThreads NCCL_LL_MAX_NTHREADS 512,
// NCCL_LL128_MAX_NTHREADS 640, NCCL_SIMPLE_MAX_NTHREADS 512 (src/include/device.h), or for Simple's
// ring 256 where its intra-node bandwidth is at most PCI_BW = 12 GB/s (src/graph/topo.h).
constexpr int64_t kLLThreadThreshold = 8;
constexpr int64_t kLL128ThreadThreshold = 8;
constexpr int64_t kSimpleThreadThreshold = 64;
constexpr int kLLMaxThreads = 512;
constexpr int kLL128MaxThreads = 640;
constexpr int kSimpleMaxThreads = 512;
constexpr int kSimplePciThreads = 256;
constexpr double kPciBwGBs = 12.0;  // PCI_BW (src/graph/topo.h)
constexpr double kNetBwGBs = 12.0;  // NET_BW (src/graph/topo.h)
// The tree's LL128 chunk (calcCollChunking, src/enqueue.cc): with nstepsLL128 = 1 + log2i(nNodes) +
// 0.1 ppn, halved while bytes / (nChannels x chunk) < nstepsLL128 x 64 / ppn and it exceeds 128 KiB,
// then while < nstepsLL128 x 16 / ppn and it exceeds 32 KiB.
constexpr double kLL128TreeStepsPerRank = 0.1;
constexpr double kLL128TreeFirstDepth = 64;
constexpr int64_t kLL128TreeFirstFloor = 131072;
constexpr double kLL128TreeSecondDepth = 16;
constexpr int64_t kLL128TreeSecondFloor = 32768;

constexpr NcclProtocol kProtocols[] = {NcclProtocol::kLL, NcclProtocol::kLL128, NcclProtocol::kSimple};

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

// Whether `option` lets the tuner consider `protocol`: kAuto the enabled ones (NCCL_PROTO unset), a
// named protocol only itself, enabled by default or not (NCCL_PROTO set: protoEnable 1).
bool allowed(const NcclTopology& topo, NcclProtocol protocol, NcclProtocolOption option) {
  switch (option) {
    case NcclProtocolOption::kAuto:
      return nccl_protocol_enabled(topo, protocol);
    case NcclProtocolOption::kSimple:
      return protocol == NcclProtocol::kSimple;
    case NcclProtocolOption::kLL:
      return protocol == NcclProtocol::kLL;
    case NcclProtocolOption::kLL128:
      return protocol == NcclProtocol::kLL128;
  }
  return false;
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
    topo.compute_capability = hint->compute_capability;
    topo.nic_near_gpu = hint->nic_near_device;
  } else {
    topo.intra_bandwidth = Bandwidth::gigabytes_per_second(kPciBwGBs);
    topo.inter_bandwidth = Bandwidth::gigabytes_per_second(kNetBwGBs);
    topo.nvlink = false;
  }
  return topo;
}

namespace {

// ncclTopoTuneModel's latency of one step of `algo` inside a node (intraLat) and across nodes
// (interLat), in us.
struct StepLatencies {
  double intra = 0;
  double inter = 0;
};
StepLatencies step_latencies_us(const NcclTopology& topo, NcclAlgo algo, NcclProtocol protocol) {
  const bool simple = protocol == NcclProtocol::kSimple;
  // graphs[a]->latencyInter (the network's reported latency) is added once, and for Simple once more
  // for the flush.
  const double added = (simple ? 2 : 1) * topo.inter_latency.microseconds();
  StepLatencies step;
  if (algo == NcclAlgo::kRing) {
    step.intra = (topo.nvlink ? kRingNvlinkLatencyUs : kRingPciLatencyUs)[protocol];
    // "Inter-node rings still have to launch nsteps * net overhead."
    if (topo.nodes > 1)
      step.intra = std::max(step.intra, kNetOverheadUs * (simple ? kSimpleNetOverheadFactor : 1.0));
    // "With ppn=1 latencies are fully exposed, use the Tree network latency."
    const double ppn = static_cast<double>(topo.ranks) / topo.nodes;
    step.inter = (ppn == 1 ? kTreeNetLatencyUs : kRingNetLatencyUs)[protocol] + added;
    return step;
  }
  step.intra = (topo.nvlink ? kTreeNvlinkLatencyUs : kTreePciLatencyUs)[protocol];
  step.inter = kTreeNetLatencyUs[protocol] + added;
  return step;
}

Time from_microseconds(double us) {
  return Time::ns(std::llround(us * 1000));
}

}  // namespace

double nccl_latency_us(const NcclTopology& topo, NcclAlgo algo, Bytes bytes, NcclProtocol protocol) {
  check(topo);
  const int ranks = topo.ranks;
  const int nodes = topo.nodes;
  if (ranks <= 1) return 0;
  const bool simple = protocol == NcclProtocol::kSimple;
  const StepLatencies step = step_latencies_us(topo, algo, protocol);
  if (algo == NcclAlgo::kRing) {
    const int steps = 2 * (ranks - 1);  // nsteps of an allreduce
    const int inter_steps = nodes == 1 ? 0 : 2 * (nodes - 1);
    double latency =
        kRingBaseLatencyUs[protocol] + (steps - inter_steps) * step.intra + inter_steps * step.inter;
    if (simple && nodes > 1 &&
        bytes.count() / (int64_t{topo.max_channels} * ranks) >= kRingPlateauBytes)
      latency *= topo.compute_capability < 80 ? kRingPlateauVolta : kRingPlateau;
    return latency;
  }
  return kTreeBaseLatencyUs[protocol] +
         2 * ((ranks / nodes - 1) * step.intra + log2i(nodes) * step.inter);
}

StepLatency nccl_step_latency(const NcclTopology& topo, NcclAlgo algo, NcclProtocol protocol) {
  check(topo);
  if (topo.ranks <= 1) return {};
  // Without latencyInter: what the network reports (0 from NCCL's IB and socket plugins, "Not set":
  // ncclIbGetProperties in src/transport/net_ib/init.cc, net_socket.cc), which the model adds once per
  // network step and once more for Simple's flush; the simulated message pays the network's latency
  // itself, and hwLatencies[NET], measured with latencyInter = 0, hold the flush's own cost.
  NcclTopology own = topo;
  own.inter_latency = Time::zero();
  const StepLatencies step = step_latencies_us(own, algo, protocol);
  const StepLatencies ll = step_latencies_us(own, algo, NcclProtocol::kLL);
  return {from_microseconds(std::max(0.0, step.intra - ll.intra)),
          from_microseconds(std::max(0.0, step.inter - ll.inter))};
}

double nccl_bandwidth_gbs(const NcclTopology& topo, NcclAlgo algo, Bytes bytes, NcclProtocol protocol) {
  check(topo);
  const int ranks = topo.ranks;
  if (ranks <= 1) return 0;
  const double bus = bus_bandwidth_gbs(topo);
  const int row = compcap_index(topo.compute_capability);
  const int index2 = topo.nodes <= 2 ? topo.nodes - 1 : 2;
  const double ll_max = kLLMaxBw[topo.nodes == 1 ? row : kIntelCpuRow][index2];
  const double channels = topo.max_channels;
  if (algo == NcclAlgo::kRing) {
    double ring_bus = bus;
    if (protocol == NcclProtocol::kLL) ring_bus = std::min(ll_max, bus * kRingLLBusFactor);
    if (protocol == NcclProtocol::kLL128)
      ring_bus = std::min(bus * kRingLL128BusFactor, channels * kPerChannelMaxRingLL128Bw[row][index2]);
    return ring_bus * ranks / (2.0 * (ranks - 1));  // busBw x nRanks / nsteps
  }
  double tree_bus = std::min(bus * kTreeBusFactor, channels * kPerChannelMaxTreeBw[row][index2]);
  if (protocol == NcclProtocol::kLL) tree_bus = std::min(tree_bus / kTreeLLDivisor, ll_max);
  if (protocol == NcclProtocol::kLL128)
    tree_bus = std::min(tree_bus * (topo.nodes == 1 ? kTreeLL128OneNodeFactor : kTreeLL128Factor),
                        channels * kPerChannelMaxTreeLL128Bw[row][index2]);
  double algo_bw = tree_bus * kTreeAlgoRatio;
  const int log_size = log2i(bytes.count() >> 6);
  if (log_size >= 0 && log_size < kTreeCorrectionSizes)
    algo_bw *= kTreeCorrection[static_cast<int>(protocol)][log_size];
  return algo_bw;
}

double nccl_time_us(const NcclTopology& topo, NcclAlgo algo, Bytes bytes, NcclProtocol protocol) {
  const double bandwidth = nccl_bandwidth_gbs(topo, algo, bytes, protocol);
  if (bandwidth <= 0) return 0;
  return nccl_latency_us(topo, algo, bytes, protocol) +
         static_cast<double>(bytes.count()) / (1000 * bandwidth);
}

bool nccl_protocol_enabled(const NcclTopology& topo, NcclProtocol protocol) {
  check(topo);
  if (protocol != NcclProtocol::kLL128) return true;
  // typeIntra <= PATH_NVB: NVLink between a node's GPUs, or no intra-node path at all (PATH_LOC).
  const bool intra = topo.nvlink || topo.ranks == topo.nodes;
  // typeInter <= PATH_PXB (PATH_PXN from SM 9.0, which PXN routing through a peer GPU reaches).
  const bool inter =
      topo.nodes == 1 || topo.nic_near_gpu || topo.compute_capability >= kLL128PxnComputeCapability;
  return intra && inter && topo.compute_capability >= kLL128MinComputeCapability;
}

int nccl_channels(const NcclTopology& topo, NcclAlgo algo, Bytes bytes, NcclProtocol protocol) {
  check(topo);
  int64_t threads = kSimpleMaxThreads;
  int64_t threshold = kSimpleThreadThreshold;
  if (protocol == NcclProtocol::kSimple) {
    const bool pci_ring =
        algo == NcclAlgo::kRing && gigabytes_per_second(topo.intra_bandwidth) <= kPciBwGBs;
    if (pci_ring) threads = kSimplePciThreads;
  } else if (protocol == NcclProtocol::kLL) {
    threads = kLLMaxThreads;
    threshold = kLLThreadThreshold * (algo == NcclAlgo::kRing ? topo.ranks : 1);
  } else {
    threads = kLL128MaxThreads;
    threshold = kLL128ThreadThreshold;
  }
  int channels = topo.max_channels;
  while (channels >= 2 && bytes.count() < channels * threads * threshold)
    --channels;
  return channels;
}

NcclChoice nccl_choose(const NcclTopology& topo, Bytes bytes, NcclProtocolOption option) {
  NcclChoice best;
  bool found = false;
  for (NcclAlgo algo : {NcclAlgo::kRing, NcclAlgo::kTree})
    for (NcclProtocol protocol : kProtocols) {
      if (!allowed(topo, protocol, option)) continue;
      const double time = nccl_time_us(topo, algo, bytes, protocol);
      if (found && !(time < best.time_us)) continue;
      best = {algo, protocol, 0, time};
      found = true;
    }
  best.channels = nccl_channels(topo, best.algo, bytes, best.protocol);
  return best;
}

PipelineOptions nccl_allreduce_pipeline(const NcclTopology& topo, const NcclChoice& choice,
                                        Bytes bytes) {
  PipelineOptions options;
  options.channels = choice.channels;
  options.protocol = choice.protocol;
  options.step_latency = nccl_step_latency(topo, choice.algo, choice.protocol);
  if (choice.protocol == NcclProtocol::kSimple) {
    // runTreeUpDown moves single-step slices: ProtoSimple<1, 1> (src/device/all_reduce.h); the ring
    // ALLREDUCE_SLICESTEPS, the default.
    if (choice.algo == NcclAlgo::kTree) options.slice_steps = 1;
    return options;
  }
  options.slice_steps = 1;
  options.step = choice.protocol == NcclProtocol::kLL ? kLLStepSize : kLL128StepSize;
  if (choice.protocol == NcclProtocol::kLL128 && choice.algo == NcclAlgo::kTree) {
    const double ppn = static_cast<double>(topo.ranks) / topo.nodes;
    const double steps = 1 + log2i(topo.nodes) + kLL128TreeStepsPerRank * ppn;
    int64_t chunk = options.step.count();
    auto chunks = [&] { return bytes.count() / (int64_t{choice.channels} * chunk); };
    while (static_cast<double>(chunks()) < steps * kLL128TreeFirstDepth / ppn &&
           chunk > kLL128TreeFirstFloor)
      chunk /= 2;
    while (static_cast<double>(chunks()) < steps * kLL128TreeSecondDepth / ppn &&
           chunk > kLL128TreeSecondFloor)
      chunk /= 2;
    options.step = Bytes(chunk);
  }
  return options;
}

std::string describe(const NcclTopology& topo, Bytes bytes, NcclProtocolOption option) {
  char line[256];
  std::string out;
  std::snprintf(line, sizeof line,
                "NCCL model: %d nodes, %d ranks, bus %.2f GB/s, %s intra, net latency %.1f us, SM %d, "
                "%d channels, protocol %s; allreduce of %lld B\n",
                topo.nodes, topo.ranks, bus_bandwidth_gbs(topo), topo.nvlink ? "NVLink" : "PCI",
                topo.inter_latency.microseconds(), topo.compute_capability, topo.max_channels,
                to_string(option).c_str(), static_cast<long long>(bytes.count()));
  out += line;
  for (NcclAlgo algo : {NcclAlgo::kRing, NcclAlgo::kTree})
    for (NcclProtocol protocol : kProtocols) {
      std::snprintf(
          line, sizeof line,
          "  %-4s %-6s latency %10.1f us  bandwidth %8.3f GB/s  time %12.1f us  channels %d%s\n",
          to_string(algo).c_str(), to_string(protocol).c_str(),
          nccl_latency_us(topo, algo, bytes, protocol), nccl_bandwidth_gbs(topo, algo, bytes, protocol),
          nccl_time_us(topo, algo, bytes, protocol), nccl_channels(topo, algo, bytes, protocol),
          allowed(topo, protocol, option)         ? ""
          : nccl_protocol_enabled(topo, protocol) ? "  (not allowed)"
                                                  : "  (off by default)");
      out += line;
    }
  const NcclChoice choice = nccl_choose(topo, bytes, option);
  out += "  choice: " + to_string(choice.algo) + " " + to_string(choice.protocol) + " on " +
         std::to_string(choice.channels) + " channel(s)\n";
  return out;
}

void nccl_allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag,
                    NcclProtocolOption option) {
  const OperationScope scope("nccl allreduce");
  if (transport.size() == 1 || data.count() == 0) return;
  const NcclTopology topo = nccl_topology(transport);
  const NcclChoice choice = nccl_choose(topo, data.bytes(), option);
  const PipelineOptions options = nccl_allreduce_pipeline(topo, choice, data.bytes());
  if (choice.algo == NcclAlgo::kRing) {
    pipelined_ring_allreduce(transport, data, op, tag, options);
  } else {
    double_tree_allreduce(transport, data, op, tag, options);
  }
}

void nccl_allgather(Transport& transport, const BufferView& data, Tag tag) {
  const OperationScope scope("nccl allgather");
  if (transport.size() == 1 || data.count() == 0) return;
  const NcclTopology topo = nccl_topology(transport);
  PipelineOptions options;
  options.slice_steps = kAllgatherSliceSteps;
  options.channels = nccl_channels(topo, NcclAlgo::kRing, data.bytes());
  options.step_latency = nccl_step_latency(topo, NcclAlgo::kRing, NcclProtocol::kSimple);
  pipelined_allgather(transport, data, tag, options);
}

}  // namespace bagua::collectives
