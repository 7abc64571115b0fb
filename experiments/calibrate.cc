#include "experiments/calibrate.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "core/collectives/collectives.h"
#include "core/compress/minmax_uint8.h"
#include "experiments/backend.h"
#include "experiments/quantity.h"
#include "experiments/runner.h"

namespace bagua::experiments {

namespace {

// Tags of the calibration's messages (it runs alone on its world).
constexpr Tag kTagControl = 1;
constexpr Tag kTagData = 2;
constexpr Tag kTagAnswer = 3;
constexpr Tag kTagGather = 4;
constexpr Tag kTagBarrier = 5;
constexpr Bytes kBurstSize{8};

void barrier(Transport& t) {
  int32_t one = 1;
  collectives::allreduce(t, BufferView::of(std::span<int32_t>(&one, 1)), ReduceOp::kSum, kTagBarrier);
}

BufferView bytes_of(const Buffer& b, Bytes n) {
  return b.view().slice(0, static_cast<size_t>(n.count()));
}

void send_count(Transport& t, int64_t n, int dst) {
  t.send(BufferView::of(std::span<int64_t>(&n, 1)), dst, kTagControl);
}
int64_t recv_count(Transport& t, int src) {
  int64_t n = 0;
  t.recv(BufferView::of(std::span<int64_t>(&n, 1)), src, kTagControl);
  return n;
}

// The ping-pong of one size between `from` (which times it) and `to`. The number of samples is chosen
// by `from` after the warm-up rounds, from their round trip, and sent to `to`.
SizeSamples pingpong(RankContext& ctx, int from, int to, Bytes size, const CalibrationOptions& o,
                     const Buffer& buffer) {
  Transport& t = ctx.transport();
  Clock& clock = ctx.clock();
  const BufferView data = bytes_of(buffer, size);
  SizeSamples s{size, {}};
  const bool pinger = t.rank() == from;
  auto round = [&] {
    if (pinger) {
      t.send(data, to, kTagData);
      t.recv(data, to, kTagData);
    } else {
      t.recv(data, from, kTagData);
      t.send(data, from, kTagData);
    }
  };
  Time warm = Time::zero();
  for (int i = 0; i < o.warmup; ++i) {
    const Time t0 = clock.now();
    round();
    warm = std::max(warm, clock.now() - t0);
  }
  int64_t samples = o.repeats;
  if (pinger) {
    if (warm > Time::zero())
      samples = std::clamp<int64_t>(o.size_budget.nanoseconds() / warm.nanoseconds(), o.min_repeats,
                                    o.repeats);
    send_count(t, samples, to);
  } else {
    samples = recv_count(t, from);
  }
  for (int64_t i = 0; i < samples; ++i) {
    const Time t0 = clock.now();
    round();
    if (pinger) s.one_way.push_back(Time::ns((clock.now() - t0).nanoseconds() / 2));
  }
  return s;
}

// `from` posts `messages` sends of `size` bytes at once; `to` receives them and answers with one byte.
// Returns the time from the first post to the answer, on `from`.
Time stream_once(RankContext& ctx, int from, int to, Bytes size, int messages, const Buffer& buffer,
                 const Buffer& answer) {
  Transport& t = ctx.transport();
  const BufferView data = bytes_of(buffer, size);
  const BufferView one = bytes_of(answer, Bytes(1));
  std::vector<RequestPtr> requests;
  const Time t0 = ctx.clock().now();
  if (t.rank() == from) {
    for (int i = 0; i < messages; ++i)
      requests.push_back(t.isend(data, to, kTagData));
    wait_all(requests);
    t.recv(one, to, kTagAnswer);
    return ctx.clock().now() - t0;
  }
  for (int i = 0; i < messages; ++i)
    requests.push_back(t.irecv(data, from, kTagData));
  wait_all(requests);
  t.send(one, from, kTagAnswer);
  return Time::zero();
}

// `from` posts `messages` sends of kBurstSize at once and waits for all of them; `to` receives them and
// answers. Returns the time until every send completed, on `from`.
Time burst_once(RankContext& ctx, int from, int to, int messages, const Buffer& buffer,
                const Buffer& answer) {
  Transport& t = ctx.transport();
  const BufferView data = bytes_of(buffer, kBurstSize);
  const BufferView one = bytes_of(answer, Bytes(1));
  std::vector<RequestPtr> requests;
  if (t.rank() == from) {
    const Time t0 = ctx.clock().now();
    for (int i = 0; i < messages; ++i)
      requests.push_back(t.isend(data, to, kTagData));
    wait_all(requests);
    const Time took = ctx.clock().now() - t0;
    t.recv(one, to, kTagAnswer);
    return took;
  }
  // Every receive has its own buffer: the sends may land in any order of completion.
  std::vector<Buffer> slots;
  for (int i = 0; i < messages; ++i) {
    slots.push_back(Buffer::like(data, DType::kU8, static_cast<size_t>(kBurstSize.count())));
    requests.push_back(t.irecv(slots.back().view(), from, kTagData));
  }
  wait_all(requests);
  t.send(one, from, kTagAnswer);
  return Time::zero();
}

PairMeasurement measure_pair(RankContext& ctx, int from, int to, const CalibrationOptions& o) {
  PairMeasurement p;
  p.from = from;
  p.to = to;
  const int64_t largest = std::max(o.max_size.count(), o.stream_size.count());
  const Buffer buffer = Buffer::host(DType::kU8, static_cast<size_t>(largest));
  const Buffer answer = Buffer::host(DType::kU8, 1);
  for (int64_t size = o.min_size.count(); size <= o.max_size.count(); size *= o.factor)
    p.pingpong.push_back(pingpong(ctx, from, to, Bytes(size), o, buffer));
  const bool timer = ctx.transport().rank() == from;
  for (int i = 0; i < o.warmup + o.stream_repeats; ++i) {
    const Time d = stream_once(ctx, from, to, o.stream_size, o.stream_messages, buffer, answer);
    if (timer && i >= o.warmup) p.stream.push_back(d);
  }
  for (int i = 0; i < o.warmup + o.burst_repeats; ++i) {
    const Time burst = burst_once(ctx, from, to, o.burst_messages, buffer, answer);
    const Time single = burst_once(ctx, from, to, 1, buffer, answer);
    if (timer && i >= o.warmup) {
      p.burst.push_back(burst);
      p.single.push_back(single);
    }
  }
  if (!timer) p = PairMeasurement{from, to, {}, {}, {}, {}};
  return p;
}

// Every rank streams to the rank of its local index on the next host (and receives from the previous
// host's); rank 0 gets the slowest rank's time of each sample.
std::vector<Time> measure_all_pairs(RankContext& ctx, const HostLayout& layout,
                                    const CalibrationOptions& o) {
  Transport& t = ctx.transport();
  const int hosts = static_cast<int>(layout.hosts.size());
  const auto& next_host = layout.hosts[static_cast<size_t>((layout.my_host + 1) % hosts)];
  const auto& previous_host = layout.hosts[static_cast<size_t>((layout.my_host + hosts - 1) % hosts)];
  const int to = next_host[static_cast<size_t>(layout.local_rank)];
  const int from = previous_host[static_cast<size_t>(layout.local_rank)];
  const Buffer out = Buffer::host(DType::kU8, static_cast<size_t>(o.stream_size.count()));
  const Buffer in = Buffer::host(DType::kU8, static_cast<size_t>(o.stream_size.count()));
  const Buffer answer_out = Buffer::host(DType::kU8, 1);
  const Buffer answer_in = Buffer::host(DType::kU8, 1);
  std::vector<Time> slowest;
  for (int i = 0; i < o.warmup + o.stream_repeats; ++i) {
    barrier(t);
    const Time t0 = ctx.clock().now();
    std::vector<RequestPtr> requests;
    for (int m = 0; m < o.stream_messages; ++m) {
      requests.push_back(t.irecv(in.view(), from, kTagData));
      requests.push_back(t.isend(out.view(), to, kTagData));
    }
    wait_all(requests);
    // The receiver's answer says the whole stream arrived.
    RequestPtr answer = t.irecv(answer_in.view(), to, kTagAnswer);
    t.send(answer_out.view(), from, kTagAnswer);
    answer->wait();
    int64_t took = (ctx.clock().now() - t0).nanoseconds();
    collectives::allreduce(t, BufferView::of(std::span<int64_t>(&took, 1)), ReduceOp::kMax, kTagGather);
    if (i >= o.warmup) slowest.push_back(Time::ns(took));
  }
  return slowest;
}

// Every rank at once: MinMax uint8 encode and decode of `device_elements` floats, really computed (on
// the simulator: charged by the clock's device model instead). Rank 0 gets the slowest rank's time of
// each sample.
std::vector<Time> measure_device(RankContext& ctx, const CalibrationOptions& o, Work& work) {
  Transport& t = ctx.transport();
  MinMaxUint8Compressor compressor;
  const size_t n = o.device_elements;
  const Buffer floats = Buffer::host(DType::kF32, n);
  const Buffer encoded =
      Buffer::host(DType::kU8, static_cast<size_t>(compressor.encoded_bytes(n).count()));
  fill_device_pass_input(floats.as<float>());
  work = compressor.encode_cost(n) + compressor.decode_cost(n);
  std::vector<Time> slowest;
  for (int i = 0; i < o.warmup + o.device_repeats; ++i) {
    barrier(t);
    const Time t0 = ctx.clock().now();
    timed_encode(ctx.clock(), compressor, floats.view(), encoded.view());
    timed_decode(ctx.clock(), compressor, encoded.view(), floats.view());
    int64_t took = (ctx.clock().now() - t0).nanoseconds();
    collectives::allreduce(t, BufferView::of(std::span<int64_t>(&took, 1)), ReduceOp::kMax, kTagGather);
    if (i >= o.warmup) slowest.push_back(Time::ns(took));
  }
  return slowest;
}

double median_ns(std::vector<Time> v) {
  BAGUA_CHECK(!v.empty(), "median of no samples");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double hi = static_cast<double>(v[n / 2].nanoseconds());
  return n % 2 ? hi : (static_cast<double>(v[n / 2 - 1].nanoseconds()) + hi) / 2;
}

// Interquartile range, by the nearest-rank quartiles.
double spread_ns(std::vector<Time> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return static_cast<double>(v[(3 * n) / 4 < n ? (3 * n) / 4 : n - 1].nanoseconds() -
                             v[n / 4].nanoseconds());
}

std::string pair_name(const PairMeasurement& p) {
  return "ranks " + std::to_string(p.from) + " and " + std::to_string(p.to);
}

std::string us_text(double ns) {
  std::ostringstream os;
  os.precision(4);
  os << ns / 1e3 << " us";
  return os.str();
}

// A stream (`what`) that took `took_ns`, no longer than the fitted round trip `round_trip_ns`: too
// small a stream, or a latency a loaded machine's scheduling inflated.
CalibrationError stream_too_short(const std::string& what, double took_ns, double round_trip_ns) {
  return CalibrationError(what + " took " + us_text(took_ns) +
                          ", no longer than a round trip of latency (" + us_text(round_trip_ns) +
                          "): raise --stream-size, or rerun on a quieter machine");
}

LinkFit fit_pair(const PairMeasurement& p, const CalibrationOptions& o) {
  const std::string who = "calibrate: " + pair_name(p) + ": ";
  BAGUA_CHECK(p.pingpong.size() >= 2, "calibrate needs two ping-pong sizes or more");
  const SizeSamples& smallest = p.pingpong.front();
  const double small_median = median_ns(smallest.one_way);
  const double small_spread = spread_ns(smallest.one_way);
  if (small_spread > small_median) {
    throw CalibrationError(who + "the one-way time of " + format_bytes(smallest.size) +
                           " messages is noisier than it is large (median " + us_text(small_median) +
                           ", interquartile range " + us_text(small_spread) +
                           "): rerun on a quieter machine");
  }
  // Least squares of one-way time on size over the sizes >= the largest / 64.
  int64_t from = p.pingpong.back().size.count() / 64;
  if (p.pingpong.size() < 2 || p.pingpong[p.pingpong.size() - 2].size.count() < from) from = 0;
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  Bytes first_fitted = p.pingpong.back().size;  // the smallest size the fit uses
  for (const SizeSamples& s : p.pingpong) {
    if (s.size.count() < from) continue;
    first_fitted = std::min(first_fitted, s.size);
    const double x = static_cast<double>(s.size.count());
    const double y = median_ns(s.one_way);
    n += 1;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double den = n * sxx - sx * sx;
  const double slope = den > 0 ? (n * sxy - sx * sy) / den : 0;  // ns per byte
  const SizeSamples& largest = p.pingpong.back();
  const double large_median = median_ns(largest.one_way);
  if (large_median <= small_median) {
    throw CalibrationError(who + format_bytes(largest.size) + " messages are not slower than " +
                           format_bytes(smallest.size) + " ones (" + us_text(large_median) + " and " +
                           us_text(small_median) + " one way): raise --max-size");
  }
  if (!(slope > 0)) {
    throw CalibrationError(
        who + "the one-way time does not grow with the size from " + format_bytes(first_fitted) +
        " to " + format_bytes(largest.size) + " (the medians' least-squares slope is " +
        std::to_string(slope) + " ns per byte; " + format_bytes(largest.size) + " messages take " +
        us_text(large_median) + "): the timings are noise, rerun on a quieter machine");
  }
  const double large_spread = spread_ns(largest.one_way);
  if (large_median - small_median <= large_spread) {
    throw CalibrationError(who + "the one-way time of " + format_bytes(largest.size) +
                           " messages is noisier than the signal (interquartile range " +
                           us_text(large_spread) + ", more than the " +
                           us_text(large_median - small_median) + " by which they exceed " +
                           format_bytes(smallest.size) + " ones): rerun on a quieter machine");
  }
  LinkFit f;
  const double alpha = std::max(0.0, small_median - static_cast<double>(smallest.size.count()) * slope);
  f.alpha = Time::ns(std::llround(alpha));
  f.beta = Bandwidth::bytes_per_second(1e9 / slope);
  const double stream_bytes = static_cast<double>(o.stream_size.count()) * o.stream_messages;
  const double stream_ns = median_ns(p.stream) - 2 * alpha;
  if (!(stream_ns > 0)) {
    throw stream_too_short(
        who + "a stream of " + format_bytes(Bytes(static_cast<int64_t>(stream_bytes))),
        median_ns(p.stream), 2 * alpha);
  }
  f.stream = Bandwidth::bytes_per_second(stream_bytes * 1e9 / stream_ns);
  return f;
}

// Per extra message of the burst, its time beyond the single send's: LogGP's gap g (the least time
// between two messages a rank injects), or the wire time of its bytes at `wire` where that is longer.
// A figure within half a nanosecond of the wire time is the wire alone (g undetectable, taken as 0).
Time gap_of(const PairMeasurement& p, const CalibrationOptions& o, Bandwidth wire) {
  const double per_message = (median_ns(p.burst) - median_ns(p.single)) / (o.burst_messages - 1);
  const double wire_ns = static_cast<double>(kBurstSize.count()) * 1e9 / wire.bytes_per_second();
  if (!(per_message > wire_ns + 0.5)) return Time::zero();
  return Time::ns(std::llround(per_message));
}

}  // namespace

void validate(const CalibrationOptions& o) {
  auto fail = [](const std::string& what) { throw ConfigError("calibrate: " + what); };
  if (o.min_size.count() < 1) fail("--min-size must be >= 1 B, got " + format_bytes(o.min_size));
  if (o.max_size < o.min_size * o.factor)
    fail("--max-size must be at least " + std::to_string(o.factor) + " x --min-size, got " +
         format_bytes(o.max_size));
  if (o.factor < 2) fail("the size factor must be >= 2, got " + std::to_string(o.factor));
  if (o.repeats < 3 || o.min_repeats < 3 || o.min_repeats > o.repeats)
    fail("--repeats must be >= 3, got " + std::to_string(o.repeats));
  if (o.stream_size.count() < 1) fail("--stream-size must be >= 1 B");
  if (o.stream_messages < 1 || o.stream_repeats < 1 || o.burst_repeats < 1 || o.burst_messages < 2)
    fail("stream and burst counts must be >= 1 (burst messages >= 2)");
}

void fill_device_pass_input(std::span<float> x) {
  std::mt19937 generator(1);
  std::normal_distribution<float> gradient(0.0f, 1e-2f);
  for (float& v : x)
    v = gradient(generator);
}

Measurements measure(RankContext& ctx, const CalibrationOptions& options) {
  validate(options);
  Transport& t = ctx.transport();
  const HostLayout layout = host_layout(t);
  if (!layout.uniform()) throw ConfigError("calibrate: every host must run the same number of ranks");
  Measurements m;
  m.options = options;
  m.hosts = static_cast<int>(layout.hosts.size());
  m.ranks_per_host = static_cast<int>(layout.hosts.front().size());
  if (t.size() == 1) throw ConfigError("calibrate: needs 2 ranks or more (run it under mpirun -np 2)");
  const int me = t.rank();
  barrier(t);
  if (m.hosts >= 2) {
    const int other = layout.hosts[1].front();
    if (me == 0 || me == other) m.inter = measure_pair(ctx, 0, other, options);
    barrier(t);
    m.all_pairs = measure_all_pairs(ctx, layout, options);
  }
  if (m.ranks_per_host >= 2) {
    const int neighbour = layout.hosts[0][1];
    barrier(t);
    if (me == 0 || me == neighbour) m.intra = measure_pair(ctx, 0, neighbour, options);
  }
  barrier(t);
  m.device = measure_device(ctx, options, m.device_work);
  if (me != 0) {
    m.device.clear();
    m.inter.reset();
    m.intra.reset();
    m.all_pairs.clear();
  }
  return m;
}

Calibration fit(const Measurements& m) {
  const CalibrationOptions& o = m.options;
  Calibration c;
  c.hosts = m.hosts;
  c.ranks_per_host = m.ranks_per_host;
  if (m.intra) {
    c.intra = fit_pair(*m.intra, o);
    c.intra_host.latency = Time::ns(c.intra->alpha.nanoseconds() / 2);
    c.intra_host.bandwidth = c.intra->stream;
  }
  if (m.inter) {
    c.inter = fit_pair(*m.inter, o);
    const double stream_bytes =
        static_cast<double>(o.stream_size.count()) * o.stream_messages * m.ranks_per_host;
    const double all_ns =
        median_ns(m.all_pairs) - 2 * static_cast<double>(c.inter->alpha.nanoseconds());
    if (!(all_ns > 0))
      throw stream_too_short("calibrate: all pairs at once", median_ns(m.all_pairs),
                             2 * static_cast<double>(c.inter->alpha.nanoseconds()));
    c.host_bandwidth = Bandwidth::bytes_per_second(stream_bytes * 1e9 / all_ns);
    // The NIC carries what a host achieves with every rank streaming out and in at once: what a
    // collective's traffic meets, both directions busy (a TCP stream's acknowledgements take some of the
    // reverse direction, which one pair streaming alone does not show).
    c.nic.bandwidth = *c.host_bandwidth;
    if (c.inter->stream.bytes_per_second() < 0.9 * c.nic.bandwidth.bytes_per_second())
      c.flow_window_cap = c.inter->stream;
    c.message_gap = gap_of(*m.inter, o, c.nic.bandwidth);
    // A lone message's CPU costs at both ends are part of alpha: the route's latency takes them.
    const Time device_links = c.intra_host.latency * 2;
    c.nic.latency = Time::ns(std::max<int64_t>(0, (c.inter->alpha - device_links).nanoseconds() / 2));
  } else {
    c.nic = c.intra_host;
  }
  if (!m.device.empty()) {
    // No time at all: a simulated cluster whose device model leaves memory out; nothing to fit.
    const double ns = median_ns(m.device);
    if (ns > 0) {
      c.device_memory_bandwidth =
          Bandwidth::bytes_per_second(static_cast<double>(m.device_work.memory.count()) * 1e9 / ns);
      c.device_peak_flops = m.device_work.flops * 1e9 / ns;
    }
  }
  if (!m.intra) {
    c.intra_host.latency = Time::zero();
    c.intra_host.bandwidth = c.nic.bandwidth;
  }
  return c;
}

namespace {

// Four significant digits: more than the measurement carries, and readable.
Bandwidth rounded(Bandwidth bw) {
  const double v = bw.bytes_per_second();
  if (!(v > 0) || !std::isfinite(v)) return bw;
  const double scale = std::pow(10.0, std::floor(std::log10(v)) - 3);
  return Bandwidth::bytes_per_second(std::round(v / scale) * scale);
}

}  // namespace

std::string cluster_file(const Calibration& c, const Measurements& m, const std::string& origin) {
  auto format_bandwidth = [](Bandwidth bw) { return experiments::format_bandwidth(rounded(bw)); };
  std::ostringstream out;
  auto pair_lines = [&](const char* what, const PairMeasurement& p, const LinkFit& f) {
    out << "//   " << what << " pair, " << pair_name(p) << ": alpha " << format_time(f.alpha)
        << ", ping-pong bandwidth " << format_bandwidth(f.beta) << ", streaming "
        << format_bandwidth(f.stream) << "\n";
    out << "//     one-way time (median of samples) by size:";
    for (const SizeSamples& s : p.pingpong)
      out << " " << format_bytes(s.size) << " " << us_text(median_ns(s.one_way)) << ";";
    out << "\n";
  };
  out << "// Calibrated by `bagua calibrate` on " << origin << ": " << c.hosts << " host"
      << (c.hosts == 1 ? "" : "s") << " x " << c.ranks_per_host << " rank"
      << (c.ranks_per_host == 1 ? "" : "s") << ".\n"
      << "// Measured (the fit is described in experiments/calibrate.h):\n";
  if (m.inter && c.inter) pair_lines("inter-host", *m.inter, *c.inter);
  if (m.intra && c.intra) pair_lines("intra-host", *m.intra, *c.intra);
  if (c.host_bandwidth)
    out << "//   all pairs at once: " << format_bandwidth(*c.host_bandwidth) << " per host\n";
  if (!m.device.empty())
    out << "//   device pass (MinMax uint8 encode + decode of " << m.options.device_elements
        << " floats, every rank at once): " << us_text(median_ns(m.device)) << ", "
        << format_bandwidth(c.device_memory_bandwidth) << " of modelled memory traffic\n";
  out << "//   per-message gap (a burst of 8 B sends, per message): " << format_time(c.message_gap)
      << "\n";
  if (!m.intra)
    out << "// One rank per host: the device links are not measured (latency 0, the NIC's "
           "bandwidth).\n";
  if (!m.inter)
    out << "// One host: the NIC is not measured (the device links' figures; never used).\n";
  Json j;
  j["hosts"] = c.hosts;
  j["devices_per_host"] = c.ranks_per_host;
  j["intra_host"] = Json{{"bandwidth", format_bandwidth(c.intra_host.bandwidth)},
                         {"latency", format_time(c.intra_host.latency)}};
  j["nic"] =
      Json{{"bandwidth", format_bandwidth(c.nic.bandwidth)}, {"latency", format_time(c.nic.latency)}};
  j["topology"] = "star";
  if (c.device_memory_bandwidth.bytes_per_second() > 0) {
    j["device"] = Json{
        {"peak_flops",
         format_flops(rounded(Bandwidth::bytes_per_second(c.device_peak_flops)).bytes_per_second())},
        {"memory_bandwidth", format_bandwidth(c.device_memory_bandwidth)}};
  }
  Json factors = Json::object();
  if (std::isfinite(c.flow_window_cap.bytes_per_second()))
    factors["flow_window_cap"] = format_bandwidth(c.flow_window_cap);
  if (c.message_gap > Time::zero()) factors["message_gap"] = format_time(c.message_gap);
  if (!factors.empty()) j["factors"] = factors;
  // What completes a send is the runtime's own protocol: Open MPI's eager/rendezvous, NCCL's slots.
  if (c.transport_model != "alpha_beta") j["transport"] = Json{{"model", c.transport_model}};
  out << j.dump(2) << "\n";
  return out.str();
}

void calibrate_world(const PointConfig& point, Backends& backends, const CalibrationOptions& options,
                     const std::string& out_file, std::ostream& out) {
  validate(options);
  if (out_file.empty()) throw ConfigError("calibrate: --out FILE is required");
  Measurements m;
  backends.run(
      point,
      [&](RankContext& ctx) {
        Measurements mine = measure(ctx, options);
        if (ctx.transport().rank() == 0) m = std::move(mine);
      },
      nullptr);
  if (!backends.is_writer()) return;
  Calibration c = fit(m);
  if (point.runtime == "mpi" || point.runtime == "nccl") c.transport_model = point.runtime;
  const std::string origin = "the " + point.runtime + " runtime" +
                             (point.runtime == "sim" ? " (the cluster of " + point.name + ")" : "");
  const std::string text = cluster_file(c, m, origin);
  const std::filesystem::path file(out_file);
  const std::filesystem::path tmp = file.string() + ".tmp";
  {
    std::ofstream f(tmp);
    f << text;
    f.close();
    if (!f) throw ConfigError("calibrate: --out " + out_file + ": cannot write " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) throw ConfigError("calibrate: --out " + out_file + ": " + ec.message());
  std::ostringstream line;
  auto format_bandwidth = [](Bandwidth bw) { return experiments::format_bandwidth(rounded(bw)); };
  line << "calibrated " << c.hosts << " x " << c.ranks_per_host << " ranks: nic "
       << format_bandwidth(c.nic.bandwidth) << " / " << format_time(c.nic.latency) << ", intra_host "
       << format_bandwidth(c.intra_host.bandwidth) << " / " << format_time(c.intra_host.latency);
  if (std::isfinite(c.flow_window_cap.bytes_per_second()))
    line << ", per-flow cap " << format_bandwidth(c.flow_window_cap);
  line << ", per-message gap " << format_time(c.message_gap) << " -> " << out_file;
  write_line(out, line.str());
}

}  // namespace bagua::experiments
