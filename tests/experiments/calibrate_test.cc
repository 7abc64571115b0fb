// `bagua calibrate`'s measurements and fit, checked where the truth is known: on the simulator, whose
// cluster is given, the fit must give the cluster back.
#include "experiments/calibrate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "core/buffer.h"
#include "core/compress/minmax_uint8.h"
#include "experiments/components.h"
#include "experiments/config.h"
#include "netsim/simulation.h"
#include "tests/experiments/scratch.h"

namespace bagua::experiments {
namespace {

// 2 hosts x 2 ranks. Device links 10 GB/s, 2 us; NIC links 1 GB/s, 10 us.
netsim::ClusterSpec two_by_two() {
  netsim::ClusterSpec spec;
  spec.hosts = 2;
  spec.devices_per_host = 2;
  spec.intra_host = {Bandwidth::gigabytes_per_second(10), Time::us(2)};
  spec.nic = {Bandwidth::gigabytes_per_second(1), Time::us(10)};
  spec.device = {15.7e12, Bandwidth::gigabytes_per_second(900)};  // a V100's, as the configs' default
  return spec;
}

// Small sizes keep the simulated measurement quick; the fit does not depend on them.
CalibrationOptions quick() {
  CalibrationOptions o;
  o.max_size = Bytes(1 << 20);
  o.stream_size = Bytes(256 << 10);
  o.repeats = 5;
  o.stream_repeats = 2;
  o.burst_repeats = 3;
  o.warmup = 1;
  o.device_elements = size_t{1} << 16;
  return o;
}

Measurements measure_on(const netsim::ClusterSpec& spec, const CalibrationOptions& o) {
  Measurements m;
  netsim::Simulation sim(spec);
  sim.run([&](RankContext& ctx) {
    Measurements mine = measure(ctx, o);
    if (ctx.transport().rank() == 0) m = std::move(mine);
  });
  return m;
}

double relative(double got, double want) {
  return std::fabs(got - want) / want;
}

// One-way times on the simulator are alpha-beta exactly: a same-host message crosses two 2 us device
// links (alpha 4 us), a message between hosts two device and two NIC links (alpha 2 + 10 + 10 + 2 = 24
// us) at the NIC's 1 GB/s. So the fit must return 2 us and 10 us per link (to the nanosecond but for
// the ceil of each transfer to whole ns), and 10 GB/s and 1 GB/s; no flow is capped, so no per-flow
// cap; and the simulator charges no per-message overhead, so none is found.
TEST(Calibrate, TheSimulatorsClusterComesBack) {
  const Measurements m = measure_on(two_by_two(), quick());
  ASSERT_TRUE(m.inter && m.intra);
  EXPECT_EQ(m.hosts, 2);
  EXPECT_EQ(m.ranks_per_host, 2);
  EXPECT_EQ(m.inter->from, 0);
  EXPECT_EQ(m.inter->to, 2);
  EXPECT_EQ(m.intra->to, 1);
  // Sizes 8 B x 8^k up to 1 MiB: 8, 64, 512, 4 KiB, 32 KiB, 256 KiB.
  ASSERT_EQ(m.inter->pingpong.size(), 6u);
  // 256 KiB between hosts, one way: 24 us + 262144 B / 1 GB/s = 24 us + 262.144 us.
  EXPECT_EQ(m.inter->pingpong.back().one_way.front(), Time::ns(24'000 + 262'144));

  const Calibration c = fit(m);
  EXPECT_NEAR(c.intra_host.latency.nanoseconds(), 2'000, 2);
  EXPECT_NEAR(c.nic.latency.nanoseconds(), 10'000, 2);
  EXPECT_LT(relative(c.intra_host.bandwidth.bytes_per_second(), 10e9), 1e-3);
  // All pairs start when they leave a barrier, a few latencies apart: their overlap is a little short of
  // whole, which a 1% tolerance covers.
  EXPECT_LT(relative(c.nic.bandwidth.bytes_per_second(), 1e9), 1e-2);
  EXPECT_LT(relative(c.inter->beta.bytes_per_second(), 1e9), 1e-3);
  EXPECT_TRUE(std::isinf(c.flow_window_cap.bytes_per_second()));
  // The device pass is memory-bound on a V100 (13 n bytes of encoding traffic and 4 n + 1.25 n of
  // decoding against 8 flops per element): its modelled bytes over its time are the 900 GB/s memory.
  EXPECT_LT(relative(c.device_memory_bandwidth.bytes_per_second(), 900e9), 1e-3);
  EXPECT_LE(c.message_gap, Time::ns(1));
}

// With every flow capped at 250 MB/s (a TCP window, say), one pair streams at 250 MB/s while two ranks
// of a host stream 500 MB/s through the 1 GB/s NIC together: the fit finds the cap, and a NIC of what
// the host achieved (500 MB/s; 1 GB/s is never seen with two capped flows). The simulator's cap is per
// flow, and each message is a flow of its own: the stream is one message here, so that one pair is one
// flow.
TEST(Calibrate, AFlowCapBelowTheNicIsFound) {
  netsim::ClusterSpec spec = two_by_two();
  spec.factors.flow_window_cap = Bandwidth::bytes_per_second(250e6);
  CalibrationOptions o = quick();
  o.stream_messages = 1;
  o.stream_size = Bytes(4 << 20);
  const Calibration c = fit(measure_on(spec, o));
  ASSERT_TRUE(std::isfinite(c.flow_window_cap.bytes_per_second()));
  EXPECT_LT(relative(c.flow_window_cap.bytes_per_second(), 250e6), 1e-3);
  EXPECT_LT(relative(c.nic.bandwidth.bytes_per_second(), 500e6), 1e-2);
  EXPECT_NEAR(c.nic.latency.nanoseconds(), 10'000, 2);
}

// A per-message overhead o = 3 us between hosts (LogGP; netsim charges it at the sender before the
// message leaves, and at the receiver): a burst of 64 sends from one rank leaves 3 us apart, so it takes
// 63 x 3 us longer than one send: the gap g comes back as 3 us. A lone message's 2 o are part of its
// alpha, 2 o + 24 us, which the route's latency takes: the NIC links get (30 - 4) / 2 = 13 us, and the
// calibrated cluster charges a lone message 2 + 13 + 13 + 2 = 30 us, as measured.
TEST(Calibrate, APerMessageCostIsFoundAsTheGap) {
  netsim::ClusterSpec spec = two_by_two();
  spec.factors.message_overhead = Time::us(3);
  const Calibration c = fit(measure_on(spec, quick()));
  EXPECT_NEAR(c.message_gap.nanoseconds(), 3'000, 2);
  EXPECT_NEAR(c.inter->alpha.nanoseconds(), 30'000, 2);
  EXPECT_NEAR(c.nic.latency.nanoseconds(), 13'000, 2);
  EXPECT_NEAR(c.intra_host.latency.nanoseconds(), 2'000, 2);
}

// One rank per host: no intra-host pair; the device links get latency 0 and the NIC's bandwidth, and
// the whole 24 us route latency goes to the two NIC links (12 us each).
TEST(Calibrate, OneRankPerHostPutsTheLatencyOnTheNic) {
  netsim::ClusterSpec spec = two_by_two();
  spec.devices_per_host = 1;
  const Calibration c = fit(measure_on(spec, quick()));
  EXPECT_EQ(c.intra_host.latency, Time::zero());
  EXPECT_NEAR(c.nic.latency.nanoseconds(), 12'000, 2);
  EXPECT_EQ(c.intra_host.bandwidth, c.nic.bandwidth);
}

// The file it writes is a cluster that a config can extend, and it gives the fitted figures back.
TEST(Calibrate, TheClusterFileLoadsAsACluster) {
  const Measurements m = measure_on(two_by_two(), quick());
  const Calibration c = fit(m);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("bagua_calibrate_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  bagua::testing::write_file(dir / "cluster.json", cluster_file(c, m, "a test"));
  const std::string config = R"({
    "name": "calibrated", "cluster": {"extends": "cluster.json"},
    "workload": {"name": "linear_regression"}, "algorithm": {"name": "gradient_allreduce"},
    "optimizer": {"name": "sgd", "lr": 0.1}})";
  const auto components = make_components();
  const Experiment e = load_experiment_json(parse_json(config, "config.json"), dir, {}, *components);
  std::filesystem::remove_all(dir);
  const netsim::ClusterSpec& got = e.points.at(0).cluster;
  EXPECT_EQ(got.hosts, 2);
  EXPECT_EQ(got.devices_per_host, 2);
  EXPECT_EQ(got.nic.latency, c.nic.latency);
  EXPECT_EQ(got.intra_host.latency, c.intra_host.latency);
  // Bandwidths are written to four significant digits.
  EXPECT_LT(relative(got.nic.bandwidth.bytes_per_second(), c.nic.bandwidth.bytes_per_second()), 1e-3);
}

// Ping-pong samples of 8 B (four: 10 us twice, 10 us + small_spread twice) and of 1 MiB (`large` twice,
// `large` + large_spread twice).
Measurements synthetic(Time small_spread, Time large, Time large_spread = Time::zero()) {
  Measurements m;
  m.options = quick();
  m.hosts = 1;
  m.ranks_per_host = 2;
  PairMeasurement p;
  p.from = 0;
  p.to = 1;
  p.pingpong = {
      {Bytes(8),
       {Time::us(10), Time::us(10), Time::us(10) + small_spread, Time::us(10) + small_spread}},
      {Bytes(1 << 20), {large, large, large + large_spread, large + large_spread}}};
  p.stream = {Time::ms(20)};
  p.burst = {Time::us(20)};
  p.single = {Time::us(10)};
  m.intra = p;
  return m;
}

std::string fit_error(const Measurements& m) {
  try {
    fit(m);
  } catch (const CalibrationError& e) {
    return e.what();
  }
  return "";
}

TEST(Calibrate, BadMeasurementsSayWhatIsWrong) {
  // A sound one first: 10 us at 8 B, 1.01 ms at 1 MiB.
  EXPECT_EQ(fit_error(synthetic(Time::us(1), Time::us(1010))), "");
  // Samples spread wider than they are large.
  EXPECT_NE(fit_error(synthetic(Time::us(30), Time::us(1010)))
                .find("ranks 0 and 1: the one-way time "
                      "of 8 B messages is noisier"),
            std::string::npos);
  // 1 MiB samples of 1.01 ms twice and 3.01 ms twice: median 2.01 ms, interquartile range 2 ms, more
  // than the 2 ms - 10.5 us by which they exceed the 8 B ones.
  EXPECT_NE(fit_error(synthetic(Time::us(1), Time::us(1010), Time::us(2000)))
                .find("1 MiB messages is noisier than the signal"),
            std::string::npos);
  // The largest size no slower than the smallest.
  EXPECT_NE(fit_error(synthetic(Time::us(1), Time::us(10))).find("raise --max-size"),
            std::string::npos);
  // The largest slower than the smallest, but among the sizes the fit uses (from 1 MiB / 64 up) the
  // times fall as the sizes grow: 512 KiB in 800 us, 1 MiB in 600 us, a slope below zero. Noise (a
  // loaded machine), not a message size too small: it said "raise --max-size" while 1 MiB took a
  // hundred times longer than 8 B.
  Measurements noisy = synthetic(Time::us(1), Time::us(600));
  noisy.intra->pingpong.insert(noisy.intra->pingpong.begin() + 1,
                               {Bytes(512 << 10), {Time::us(800), Time::us(800), Time::us(800),
                                                   Time::us(800)}});
  const std::string error = fit_error(noisy);
  EXPECT_NE(error.find("ranks 0 and 1: the one-way time does not grow with the size from 512 KiB "
                       "to 1 MiB"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("rerun on a quieter machine"), std::string::npos) << error;
  EXPECT_EQ(error.find("raise --max-size"), std::string::npos) << error;
  // A stream that took 1 us, less than the round trip of the fitted latency (about 2 x 10 us): too
  // small a stream, or a latency inflated by a loaded machine's scheduling (what a busy test machine
  // gave); the message says both.
  Measurements short_stream = synthetic(Time::us(1), Time::us(1010));
  short_stream.intra->stream = {Time::us(1)};
  const std::string stream_error = fit_error(short_stream);
  EXPECT_NE(stream_error.find("took 1 us, no longer than a round trip of latency"), std::string::npos)
      << stream_error;
  EXPECT_NE(stream_error.find("raise --stream-size, or rerun on a quieter machine"), std::string::npos)
      << stream_error;
}

// The device pass times MinMax on gradient-like floats: signs mixed, neither the min nor the max a
// zero, before and after a round trip (the pass decodes into its input), so that encoding never takes
// the exact path for zeros (checked_min_max's reference scan), which a gradient does not take either.
// The former input, i % 1000 / 1000, had min 0. Its spread is N(0, 0.01^2)'s: about 68 % of the
// values within one standard deviation.
TEST(Calibrate, TheDevicePassEncodesGradientLikeFloats) {
  const size_t n = size_t{1} << 16;
  std::vector<float> x(n), again(n);
  fill_device_pass_input(x);
  fill_device_pass_input(again);
  EXPECT_EQ(x, again);  // the same input on every rank and every run
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  EXPECT_LT(*lo, 0.0f);
  EXPECT_GT(*hi, 0.0f);
  const auto within = std::count_if(x.begin(), x.end(), [](float v) { return std::fabs(v) < 1e-2f; });
  EXPECT_NEAR(static_cast<double>(within) / static_cast<double>(n), 0.683, 0.01);

  MinMaxUint8Compressor c;
  Buffer in = Buffer::host(DType::kF32, n);
  std::copy(x.begin(), x.end(), static_cast<float*>(in.view().data()));
  const Buffer encoded = Buffer::host(DType::kU8, static_cast<size_t>(c.encoded_bytes(n).count()));
  c.encode(in.view(), encoded.view());
  c.decode(encoded.view(), in.view());
  const float* y = static_cast<const float*>(in.view().data());
  const auto [dlo, dhi] = std::minmax_element(y, y + n);
  EXPECT_LT(*dlo, 0.0f);
  EXPECT_GT(*dhi, 0.0f);
}

TEST(Calibrate, OptionsAreChecked) {
  CalibrationOptions o;
  o.max_size = Bytes(16);
  EXPECT_THROW(validate(o), ConfigError);
  o = {};
  o.repeats = 1;
  EXPECT_THROW(validate(o), ConfigError);
  EXPECT_NO_THROW(validate(CalibrationOptions{}));
}

}  // namespace
}  // namespace bagua::experiments
