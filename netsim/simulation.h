// The simulator's public face: a cluster description and a Simulation that runs one function per rank,
// each as a cooperative fiber, on a discrete-event engine with a flow-level network model.
//
// This header is the contract with the composition root (experiments/); everything else in netsim/ is
// internal to it.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/collectives/nccl_flow.h"
#include "core/context.h"
#include "core/params.h"
#include "core/trace.h"
#include "core/units.h"
#include "core/world.h"

namespace bagua::netsim {

class Topology;  // netsim/topology.h

struct LinkSpec {
  Bandwidth bandwidth;
  Time latency;
};

// The PCIe path from a device to its host's NIC, in NCCL's path types (src/include/graph.h) and the
// names nvidia-smi topo -m prints: kPix through at most one PCIe switch, kPxb through several,
// kPhb through a CPU's host bridge, kSys across CPU sockets. NCCL's LL128 protocol is on by default
// only up to kPxb before SM 9.0 (ncclTopoTuneModel, src/graph/tuning.cc).
enum class NicPath : uint8_t { kPix, kPxb, kPhb, kSys };
std::string to_string(NicPath path);  // "pix", "pxb", "phb", "sys"

// A device (GPU) model for Clock::compute: duration + max(flops / peak_flops, memory /
// memory_bandwidth). Each term is rounded up to whole nanoseconds; a zero peak_flops or
// memory_bandwidth leaves its term out (that resource is not modelled). A rank's streams compute
// concurrently, without contending. A host's CPU (Processor::kHostCpu) has a model of the same form.
//
// And what NCCL's tuning model reads of the devices (core/collectives/nccl.h, NcclTopology, through
// Transport::link_hint): their CUDA compute capability and the PCIe path from each to its NIC.
struct DeviceSpec {
  double peak_flops = 0;       // FLOP/s
  Bandwidth memory_bandwidth;  // device memory
  // Major x 10 + minor (NVIDIA's table, developer.nvidia.com/cuda-gpus: V100 7.0, A100 8.0, H100
  // 9.0); default the paper's V100.
  int compute_capability = 70;
  NicPath nic_path = NicPath::kPxb;
};

// Which registered topology (netsim/topology.h) and its parameters, as given: make_topology checks
// them against the topology's schema and fills in the defaults. A bandwidth parameter is a double in
// bytes per second, a time parameter an int64_t in nanoseconds (core/params.h, ParamUnit).
struct TopologySpec {
  std::string name = "star";
  std::map<std::string, ParamValue> params;
};

// Named model factors, all 1 (or unlimited, or zero) by default so that the uncalibrated model is
// exactly the alpha-beta closed form; calibration is explicit.
//
// Terms:
//   connection  one TCP stream between two hosts; a message is carried by connections_per_peer of them
//   RTT         a route's round-trip time: 2 x its one-way latency (latency factor included)
//   window cap  a flow's own rate bound: min(flow_window_cap, connections_per_peer x tcp_window / RTT)
//   o, g        LogGP's per-message overhead and gap (Alexandrov et al., "LogGP: Incorporating Long
//               Messages into the LogP Model", SPAA 1995)
//   cwnd        (tcp_slow_start) a connection's congestion window: it starts at tcp_initial_window,
//               grows while the connection carries data, restarts after idle; the window cap then
//               uses min(cwnd, tcp_window) (netsim/model_factors.h, "slow start", has the rules)
struct ModelFactors {
  double bandwidth_efficiency = 1.0;  // a flow gets at most this fraction of each link's bandwidth
  double latency_factor = 1.0;        // route latency is multiplied by this
  // A per-flow rate cap independent of the route (a measured per-message rate); for the window of a
  // TCP connection, whose rate depends on the route's RTT, use tcp_window.
  Bandwidth flow_window_cap = Bandwidth::infinite();
  // The bytes one TCP connection may have unacknowledged: it moves at most one window per RTT (the
  // bandwidth-delay product, RFC 7323 section 1). 0: no window (RDMA, or a window never binding).
  // Applies to flows between hosts; routes within a host (NVLink, shared memory) are not TCP.
  Bytes tcp_window;
  // Connections carrying each message between two hosts (NCCL's socket transport: NCCL_NSOCKS_PERTHREAD
  // x NCCL_SOCKET_NTHREADS, src/transport/net_socket.cc in NVIDIA/nccl): the window cap is per
  // connection, so a message moves at most connections_per_peer windows per RTT.
  int connections_per_peer = 1;
  // The sum of the rates of the inter-host flows leaving one host, and separately of those entering
  // it, is at most this: what a socket transport's CPU threads achieve on the NIC, an extra constraint
  // per host direction in the max-min sharing.
  Bandwidth host_bandwidth_ceiling = Bandwidth::infinite();
  // o: sender CPU time per message between hosts before it leaves, and receiver CPU time before its
  // receive completes (messages within a host, over NVLink or shared memory, pay neither o nor g).
  Time message_overhead;
  Time message_gap;  // g: one rank begins injecting messages between hosts at least max(o, g) apart
  // TCP slow start (RFC 5681, section 3.1) and its restart after idle (section 4.1; RFC 2861), as
  // Linux runs them: off by default. Needs tcp_window > 0 (the window the congestion window grows to).
  // A connection is one ordered pair of world ranks on two hosts (a socket between two processes).
  bool tcp_slow_start = false;
  // IW: Linux's TCP_INIT_CWND = 10 segments (include/net/tcp.h; RFC 6928) of 1448 bytes, the MSS of a
  // 1500-byte Ethernet MTU less 20 bytes of IPv4 header, 20 of TCP header and 12 of the timestamp
  // option Linux sends by default (net.ipv4.tcp_timestamps = 1, Documentation/networking/
  // ip-sysctl.rst).
  Bytes tcp_initial_window = Bytes(10 * 1448);
  // Linux's net.ipv4.tcp_slow_start_after_idle, default 1 (Documentation/networking/ip-sysctl.rst).
  bool tcp_restart_after_idle = true;
  // Linux's TCP_RTO_MIN = HZ / 5 = 200 ms (include/net/tcp.h), the floor of the RTT variance term of
  // the retransmission timeout.
  Time tcp_rto_min = Time::ms(200);
};

// What completes a send on the simulated transport (netsim/transport.h has the full rules).
//   kArrival           the send completes when its bytes have landed (the alpha-beta default)
//   kEagerRendezvous   MPI-like: at most the eager limit, the send completes at once (buffered);
//                      above it, a request-to-send / clear-to-send round trip precedes the bytes and
//                      the send completes when they have landed
//   kCreditSlots       NCCL-like: at most `slots` messages in flight per (group, source, destination);
//                      a send of at most slot_bytes completes once it holds a slot, a larger one when
//                      its bytes have landed; a slot is freed when the receive completes
enum class SendCompletion : uint8_t { kArrival, kEagerRendezvous, kCreditSlots };
std::string to_string(SendCompletion c);

struct TransportModel {
  SendCompletion completion = SendCompletion::kArrival;
  // FIFO transfer per connection: the messages from one world rank to another are one ordered byte
  // stream (netsim/network.h, "connection"): a message's bytes start moving only once the previous
  // message's bytes to that peer have landed, and the TCP window caps the stream, not each message.
  // Open MPI's btl_tcp sends a peer's fragments one after another on its one socket
  // (endpoint_send_frag, then the endpoint_frags list, opal/mca/btl/tcp/btl_tcp_endpoint.c), NCCL's
  // socket transport sends a connection's requests in order on its sockets
  // (src/transport/net_socket.cc in NVIDIA/nccl), and the RC queue pairs of NCCL's IB transport
  // (IBV_QPT_RC, src/transport/net_ib/connect.cc) deliver in order (NVIDIA's RDMA Aware
  // Networks Programming User Manual, Transport Modes: RC delivers its packets in order, like TCP). Within a host too: Open
  // MPI's shared-memory BTL passes fragments through a FIFO read in order by the receiver
  // (opal/mca/btl/sm/btl_sm_fifo.h), so a peer pair's copies are taken one after another. The
  // connection is the ordered pair (source, destination) of world ranks, whatever the group (btl_tcp's
  // endpoint is per peer process, not per communicator). Off: every message is its own flow.
  bool ordered = false;
  Bytes eager_limit;             // kEagerRendezvous, between hosts
  Bytes eager_limit_intra_host;  // kEagerRendezvous, within a host (shared memory)
  int slots = 0;                 // kCreditSlots
  Bytes slot_bytes;              // kCreditSlots

  // Open MPI 4.1's ob1 over its tcp and vader (shared memory) BTLs.
  static TransportModel mpi();
  // NCCL's Simple protocol: NCCL_STEPS slots of DEFAULT_BUFFSIZE / NCCL_STEPS bytes.
  static TransportModel nccl();
};

// Hosts without accelerators beside the worker hosts, each running one service rank (core/services.h):
// BytePS's summation servers on CPU-only machines (bytedance/byteps docs/step-by-step-tutorial.md,
// DMLC_ROLE=server). CPU host c is host `hosts + c`; its one rank is world rank world_size() + c, its
// NIC link cpu<c>.nic (bandwidth and latency `nic`), and the rank's own link into it cpu<c>.dev0 (the
// cluster's intra_host link: the server process's path through host memory, never the bottleneck in
// the presets). A topology places them where it can (netsim/topology.h: place_cpu_hosts); count 0: none.
// `cpu`: the CPU host's processor for its rank's Clock::compute (whatever Work::processor says).
struct CpuHostsSpec {
  int count = 0;
  LinkSpec nic;
  DeviceSpec cpu;
};

struct ClusterSpec {
  int hosts = 1;
  int devices_per_host = 1;
  LinkSpec intra_host;  // device <-> host fabric, one full-duplex link per device (NVLink-like)
  LinkSpec nic;         // a NIC <-> its switch: one full-duplex link per host (per device: rails)
  TopologySpec topology;
  DeviceSpec device;
  // Each worker host's CPU, for the Work a worker charges on Processor::kHostCpu (BytePS's colocated
  // server summing on the GPU machine's CPU). Not modelled (zero) unless set.
  DeviceSpec cpu;
  ModelFactors factors;
  TransportModel transport;
  CpuHostsSpec cpu_hosts;
  // How NCCL's collectives (core/collectives/nccl.h) are carried: slice by slice (the default, what
  // NCCL moves) or at flow granularity (core/collectives/nccl_flow.h: a few transfers per call and a
  // closed-form pipeline term, for thousands of ranks; meta buffers only).
  collectives::CollectiveGranularity collective_granularity =
      collectives::CollectiveGranularity::kSlice;

  // The workers: hosts x devices_per_host ranks, world ranks 0 .. world_size() - 1.
  int world_size() const { return hosts * devices_per_host; }
  // Every rank the simulator runs: the workers, then one service rank per CPU host.
  int total_ranks() const { return world_size() + cpu_hosts.count; }
  // Every host: the worker hosts, then the CPU hosts.
  int total_hosts() const { return hosts + cpu_hosts.count; }
};

// Throws ConfigError naming the first invalid field, prefixed by `prefix` (e.g. "cluster."), as in
// "cluster.nic.bandwidth must be > 0, got 0". Fields: hosts, devices_per_host, intra_host.bandwidth,
// intra_host.latency, nic.bandwidth, nic.latency, topology.<parameter> (the topology's own checks,
// e.g. "cluster.topology.k must be even, got 3"), device.peak_flops, device.memory_bandwidth,
// cpu.peak_flops, cpu.memory_bandwidth, factors.bandwidth_efficiency, factors.latency_factor,
// factors.flow_window_cap, cpu_hosts.count (>= 0), cpu_hosts.nic.bandwidth, cpu_hosts.nic.latency,
// cpu_hosts.cpu.peak_flops, cpu_hosts.cpu.memory_bandwidth (when count > 0). Link bandwidths must
// be finite and > 0; latencies >= 0; a zero peak_flops or memory_bandwidth leaves that term out of
// compute times.
void validate(const ClusterSpec& spec, const std::string& prefix = "");
// validate() without the topology's own checks, for a caller that builds the topology next:
// make_topology (netsim/topology.h) throws the same errors, and the topology is built once.
void validate_except_topology(const ClusterSpec& spec, const std::string& prefix = "");

// The same for the fields validate() leaves out: factors.tcp_window (>= 0), connections_per_peer
// (>= 1), host_bandwidth_ceiling (> 0, may be infinite), message_overhead and message_gap (>= 0), with
// tcp_slow_start: tcp_window > 0, tcp_initial_window >= 1 B and tcp_rto_min >= 0, and
// the transport model's (eager limits >= 0; slots and slot_bytes >= 1 for credit slots), as in
// "cluster.factors.connections_per_peer must be >= 1, got 0". Simulation calls both.
void validate_model(const ClusterSpec& spec, const std::string& prefix = "");

// The time the simulator charges one message of `bytes` from world rank `src` to `dst` when it is alone
// on the network, from isend to the receive's completion (posted in time): the sender's overhead o,
// the rendezvous round trip where the transport has one (2 x route latency), route latency *
// latency_factor, ceil(bytes / the route's rate: its slowest capacity, capped by the window cap and the
// host ceiling; with tcp_slow_start, round by round from the initial window of a new connection, as
// FlowNetwork steps it), and the receiver's o; 0 from a rank to itself. Without factors and transport model,
// the alpha-beta closed form. For closed-form tests and for printing predicted costs before a run.
// `spec` must be valid.
Time lone_transfer_time(const ClusterSpec& spec, int src, int dst, Bytes bytes);
// The same on `topology`, already built from `spec` (which must be valid): no checks, no topology
// built (the simulated transport's FlowCapable::transfer_time).
Time lone_transfer_time(const ClusterSpec& spec, const Topology& topology, int src, int dst,
                        Bytes bytes);

// The links and devices `spec` is built with, as Transport::link_hint reports them (NCCL's tuner
// reads them): the simulator's transports, and a real runtime's when a config describes its cluster
// (World::set_link_hint), so that both tune alike.
LinkHint link_hint_of(const ClusterSpec& spec);

struct SimOptions {
  bool trace = false;        // record a Chrome trace-event timeline
  TraceFilter trace_filter;  // which ranks and iterations it keeps (core/trace.h)
  // Whether the flow model may re-solve every flow at once where one component holds most of them
  // (FlowNetwork::set_solve_whole_network): the same results bit for bit, sooner; off for the tests
  // that check that.
  bool solve_whole_network = true;
};

// Per-rank and per-link totals over the whole run (the simulated time); the types of core's RunReport.
using bagua::LinkStats;
using bagua::RankStats;

class Simulation {
 public:
  // Validates `spec` (ConfigError naming the field, see validate()).
  Simulation(ClusterSpec spec, SimOptions options = {});
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // Runs `body` on every rank (rank r < world_size() on host r / devices_per_host, then the CPU hosts'
  // service ranks, ClusterSpec::cpu_hosts) until every one returns; returns
  // the simulated time at which the last finished. An exception thrown by any rank stops the run and
  // is rethrown here (the first one, by simulated time); a deadlock (ranks blocked, nothing scheduled)
  // throws InternalError naming the blocked ranks and what they wait for. A Simulation runs once.
  Time run(const std::function<void(RankContext&)>& body);

  const ClusterSpec& spec() const { return spec_; }
  std::vector<RankStats> rank_stats() const;
  std::vector<LinkStats> link_stats() const;
  // The timeline recorded when options.trace was set, in the Chrome trace-event format (Perfetto).
  void write_trace(std::ostream& out) const;
  // Number of events processed (for the simulator-speed benchmark).
  uint64_t events_processed() const;
  // Number of times the flows' rates were re-solved (max-min sharing of a component of flows with
  // more than their lone rates to settle; netsim/network.h), for the benchmark and its tests.
  uint64_t rate_solves() const;
  // Of those, the re-solves that covered every flow at once (FlowNetwork::whole_network_solves).
  uint64_t whole_network_solves() const;
  // Number of switches into the ranks' fibers (Fibers::switches), for the benchmark and its tests.
  uint64_t fiber_switches() const;

 private:
  struct Impl;
  ClusterSpec spec_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bagua::netsim
