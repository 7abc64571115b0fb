#include "netsim/simulation.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <new>
#include <ostream>
#include <stdexcept>
#include <tuple>

#include "core/check.h"
#include "netsim/context.h"
#include "netsim/model_factors.h"
#include "netsim/world.h"

namespace bagua::netsim {

namespace {

// Linux's limit on a process's memory mappings (each fiber stack takes two), as a word for a message.
std::string max_map_count() {
  std::ifstream in("/proc/sys/vm/max_map_count");
  long long count = 0;
  return in >> count ? std::to_string(count) : std::string("a limited number");
}

}  // namespace

World::World(const ClusterSpec& spec_in, const SimOptions& options)
    : spec(spec_in),
      tracing(options.trace),
      topology_owner(make_topology(spec_in)),
      topology(*topology_owner),
      network(topology, spec_in.factors, spec_in.total_hosts(), engine),
      trace(options.trace_filter),
      totals(static_cast<size_t>(spec_in.total_ranks())),
      mailbox(*this),
      fibers(engine, [this](Fibers::Fiber& f, std::exception_ptr e) {
        fail(f.rank, engine.now(), std::move(e));
      }) {
  network.set_solve_whole_network(options.solve_whole_network);
}

void Meetings::meet(Fibers& fibers, uint64_t group, Tag tag, int group_rank, int size,
                    bool subgroup) {
  if (size <= 1) return;
  const uint64_t n = calls_[{group, tag, group_rank}]++;
  const std::tuple<uint64_t, Tag, uint64_t> key{group, tag, n};
  Meeting& meeting = open_[key];
  if (++meeting.came == size) {
    meeting.waiters.wake_all(fibers);
    open_.erase(key);
    return;
  }
  meeting.waiters.add(fibers.current());
  WaitReason reason;
  reason.kind = WaitKind::kMeeting;
  reason.tag = tag;
  reason.subgroup = subgroup;
  fibers.block(reason);
}

void World::fail(int rank, Time at, std::exception_ptr error) {
  if (fibers.aborting()) return;  // thrown while unwinding after the failure that stopped the run
  if (!failure || std::tie(at, rank) < std::tie(failure->at, failure->rank))
    failure = Failure{at, rank, std::move(error)};
}

LinkHint link_hint_of(const ClusterSpec& spec) {
  LinkHint hint{spec.intra_host.bandwidth, spec.intra_host.latency, spec.nic.bandwidth,
                spec.nic.latency};
  hint.compute_capability = spec.device.compute_capability;
  hint.nic_near_device = spec.device.nic_path <= NicPath::kPxb;
  return hint;
}

Time lone_transfer_time(const ClusterSpec& spec, int src, int dst, Bytes bytes) {
  validate_except_topology(spec);  // the topology's own checks: make_topology, below
  validate_model(spec);
  BAGUA_CHECK(
      src >= 0 && dst >= 0 && src < spec.total_ranks() && dst < spec.total_ranks(),
      "lone_transfer_time between ranks " + std::to_string(src) + " and " + std::to_string(dst));
  if (src == dst) return Time::zero();
  const std::unique_ptr<Topology> topology = make_topology(spec);
  return lone_transfer_time(spec, *topology, src, dst, bytes);
}

Time lone_transfer_time(const ClusterSpec& spec, const Topology& topology_ref, int src, int dst,
                        Bytes bytes) {
  if (src == dst) return Time::zero();
  const Topology* topology = &topology_ref;
  const Route route = topology->route(src, dst);
  const bool between_hosts = topology->host_of(src) != topology->host_of(dst);
  // LogGP's o at the sender and again at the receiver, between hosts (message_gap spaces consecutive
  // messages only).
  const Time overheads = between_hosts ? spec.factors.message_overhead * 2 : Time::zero();
  // A rendezvous: request-to-send and clear-to-send, one route latency each, before the bytes.
  Time handshake;
  const TransportModel& transport = spec.transport;
  if (transport.completion == SendCompletion::kEagerRendezvous) {
    const Bytes limit = between_hosts ? transport.eager_limit : transport.eager_limit_intra_host;
    if (bytes > limit) handshake = route.latency * 2;
  }
  if (bytes.count() == 0) return overheads + route.latency;
  // The same arithmetic as FlowNetwork: the rate is the max-min share of a flow alone, its window cap
  // and, between hosts, the host ceilings being constraints like its links.
  double rate = window_cap(spec.factors, route.latency, between_hosts);
  double capacity = std::numeric_limits<double>::infinity();  // the slowest constraint
  for (const int32_t link : route.links)
    capacity =
        std::min(capacity, topology->links()[static_cast<size_t>(link)].capacity.bytes_per_second());
  if (between_hosts)
    capacity = std::min(capacity, spec.factors.host_bandwidth_ceiling.bytes_per_second());
  // Everything but phase 2 (the receiver's o comes after it, which does not change the sum).
  const Time fixed = overheads + handshake + route.latency;
  if (!slow_start_applies(spec.factors, route.latency, between_hosts))
    return fixed + ceil_ns(static_cast<double>(bytes.count()) * 1e9 / std::min(rate, capacity));
  // Slow start on a new connection, FlowNetwork's steps one by one: the cap of cwnd for a round, the
  // flow brought up to date at the round's end, the grown cap (and a new completion if the rate
  // moved); a completion due at a round's end comes first.
  const Time rtt = route.latency * 2;
  double cwnd = static_cast<double>(spec.factors.tcp_initial_window.count());
  double remaining = static_cast<double>(bytes.count());
  rate = std::min(slow_start_cap(spec.factors, cwnd, route.latency), capacity);
  Time now;  // from the start of phase 2
  Time done = now + ceil_ns(remaining * 1e9 / rate);
  while (cwnd < static_cast<double>(spec.factors.tcp_window.count()) && done > now + rtt) {
    remaining -= rate * static_cast<double>(rtt.nanoseconds()) / 1e9;
    if (remaining < 0) remaining = 0;
    now = now + rtt;
    cwnd = grown_window(spec.factors, cwnd, /*full=*/true, 0);
    const double grown = std::min(slow_start_cap(spec.factors, cwnd, route.latency), capacity);
    if (grown != rate) {
      rate = grown;
      done = now + ceil_ns(remaining * 1e9 / rate);
    }
  }
  return fixed + done;
}

struct Simulation::Impl {
  Impl(const ClusterSpec& spec, const SimOptions& options) : world(spec, options) {}

  // "deadlock at 1.200 ms: rank 3 waits for a receive from rank 2 tag 5; ..."
  std::string deadlock_report() const {
    constexpr int kListed = 16;  // enough to see the pattern; the rest are counted
    std::string listed;
    int blocked = 0;
    for (const auto& f : world.fibers.all()) {
      if (f->state != Fibers::State::kBlocked || f->reason.kind == WaitKind::kStreamIdle) continue;
      if (blocked++ >= kListed) continue;
      listed += (listed.empty() ? "" : "; ") + std::string("rank ") + std::to_string(f->rank) +
                (f->name.empty() ? "" : " (stream '" + f->name + "')") + " waits for " +
                describe(f->reason);
    }
    if (blocked == 0) return "";
    if (blocked > kListed) listed += "; and " + std::to_string(blocked - kListed) + " more";
    return "deadlock at " + to_string(world.engine.now()) + ": " + listed;
  }

  // Contexts first, so that they outlive the world's fibers (which are unwound when the world dies).
  std::vector<std::unique_ptr<SimContext>> contexts;
  World world;
  bool ran = false;
  Time end;  // when the last rank's body returned
};

Simulation::Simulation(ClusterSpec spec, SimOptions options) : spec_(std::move(spec)) {
  validate_except_topology(spec_);  // the topology's own checks: World's make_topology
  validate_model(spec_);
  impl_ = std::make_unique<Impl>(spec_, options);
}

Simulation::~Simulation() = default;

Time Simulation::run(const std::function<void(RankContext&)>& body) {
  Impl& impl = *impl_;
  World& world = impl.world;
  BAGUA_CHECK(!impl.ran, "a Simulation runs once");
  impl.ran = true;

  const int ranks = spec_.total_ranks();
  impl.contexts.reserve(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r)
    impl.contexts.push_back(std::make_unique<SimContext>(world, r));
  for (int r = 0; r < ranks; ++r) {
    world.fibers.spawn(r, /*track=*/0, [&impl, &body, r] {
      body(*impl.contexts[static_cast<size_t>(r)]);
      impl.end = std::max(impl.end, impl.world.engine.now());
    });
  }

  // After a failure, the events due at the same time still run, so that a lower rank failing at the
  // same instant is the one reported.
  // An exception out of the engine itself (not a rank's: those are recorded by fail()) stops the run
  // here: every fiber is unwound before it leaves, so that none is left to the World's destructor. Out
  // of memory, typically a fiber's stack that cannot be mapped (1 MiB of address space per rank and
  // stream, netsim/fibers.cc), becomes an error that says so.
  try {
    while (!world.engine.idle()) {
      if (world.failure && world.engine.next_time() > world.failure->at) break;
      world.engine.step();
    }
  } catch (const std::bad_alloc&) {
    const size_t fibers = world.fibers.all().size();
    world.fibers.abort_all();
    throw std::runtime_error(
        "the simulation of " + std::to_string(ranks) + " ranks ran out of memory at " +
        to_string(world.engine.now()) + " with " + std::to_string(fibers) +
        " fibers (ranks and their streams; every fiber's stack takes 1 MiB of address space, 4 MiB "
        "under AddressSanitizer, and two memory mappings, of which Linux allows a process " +
        max_map_count() + ": sysctl vm.max_map_count)");
  } catch (...) {
    world.fibers.abort_all();
    throw;
  }
  if (world.failure) {
    world.fibers.abort_all();
    std::rethrow_exception(world.failure->error);
  }
  const std::string deadlock = impl.deadlock_report();
  if (!deadlock.empty()) {
    world.fibers.abort_all();
    throw InternalError(deadlock);
  }
  world.fibers.abort_all();  // streams whose handle outlived the body (idle): nothing left to do
  return impl.end;
}

std::vector<RankStats> Simulation::rank_stats() const {
  std::vector<RankStats> out;
  for (const RankTotals& t : impl_->world.totals)
    out.push_back({t.compute, t.busy_comm});
  return out;
}

std::vector<LinkStats> Simulation::link_stats() const {
  const World& world = impl_->world;
  const auto& links = world.topology.links();
  const double seconds = world.engine.now().seconds();
  std::vector<LinkStats> out;
  out.reserve(links.size());
  for (size_t i = 0; i < links.size(); ++i) {
    const int64_t carried = world.network.carried()[i];
    const double capacity = links[i].bandwidth.bytes_per_second() * seconds;
    out.push_back(
        {links[i].name, Bytes(carried), capacity > 0 ? static_cast<double>(carried) / capacity : 0.0});
  }
  return out;
}

void Simulation::write_trace(std::ostream& out) const {
  impl_->world.trace.write(out, spec_.total_ranks());
}

uint64_t Simulation::events_processed() const {
  return impl_->world.engine.events_processed();
}

uint64_t Simulation::fiber_switches() const {
  return impl_->world.fibers.switches();
}

uint64_t Simulation::rate_solves() const {
  return impl_->world.network.rate_solves();
}

uint64_t Simulation::whole_network_solves() const {
  return impl_->world.network.whole_network_solves();
}

}  // namespace bagua::netsim
