// The ring exchange of bench/ring_allreduce_1024.json on SimGrid (Casanova et al., "Versatile, Scalable,
// and Accurate Simulation of Distributed Applications and Platforms", JPDC 2014; libsimgrid-dev, S4U
// API), for scripts/bench's ring section: another simulator's prediction of the same run beside ours,
// and what it costs.
//
// The platform is the config's: a star of `ranks` single-device hosts, each attached by a split-duplex
// link (an up and a down link, as a NIC's two directions in our star) of `bandwidth` and `latency`, so
// that a message crosses its sender's up link and its receiver's down link. Each rank runs our bulk-
// synchronous ring (core/collectives: ring_allreduce, `"allreduce": "ring"`): 2 (P - 1) steps, each a
// send of S / P bytes to the right neighbour and a receive from the left, waiting for both (Transport::
// sendrecv); no data moves, only sizes, as on our meta buffers.
//
// The network model is SimGrid's CM02 (max-min sharing of the links, a transfer taking the route's
// latency and then its share of the bandwidth; Casanova and Marchal 2002), with the TCP window bound
// (network/TCP-gamma) and the reverse-direction acknowledgement load (network/crosstraffic) off: the
// alpha-beta, max-min model ours implements with every factor off (netsim/README.md). SimGrid's default
// model, LV08, adds factors fitted to TCP (latency x 13.01, bandwidth x 0.97); `--cfg=network/model:
// LV08` after the arguments selects it (any --cfg=... is SimGrid's own option).
//
// Two more patterns check the sharing (tests/netsim/simgrid_agreement_test.cc uses all three): incast,
// every rank but 0 sends BYTES to rank 0 at once, so the P - 1 flows share rank 0's down link; mixed
// (4 ranks), 0 sends BYTES to 1 and 2 BYTES to 2 while 3 sends 3 BYTES to 2, so that two links are
// shared by different flows and the rates change as flows end.
//
// Usage: bench_simgrid_ring [ring|incast|mixed] RANKS BYTES BANDWIDTH_BPS LATENCY_S [--cfg=...]
// (ring when the pattern is left out). Prints one JSON object: {"pattern", "ranks", "bytes",
// "simulated_s"}.
#include <cstdio>
#include <cstdlib>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace {

void rank_actor(int rank, int ranks, double chunk) {
  sg4::Mailbox* mine = sg4::Mailbox::by_name("rank-" + std::to_string(rank));
  sg4::Mailbox* right = sg4::Mailbox::by_name("rank-" + std::to_string((rank + 1) % ranks));
  static char token;  // what is sent: a pointer; the size is `chunk`
  for (int step = 0; step < 2 * (ranks - 1); ++step) {
    sg4::CommPtr send = right->put_async(&token, static_cast<uint64_t>(chunk));
    mine->get<char>();
    send->wait();
  }
}

void incast_actor(int rank, int ranks, double bytes) {
  sg4::Mailbox* root = sg4::Mailbox::by_name("rank-0");
  static char token;
  if (rank != 0) {
    root->put(&token, static_cast<uint64_t>(bytes));
    return;
  }
  // Every receive posted at once, so that every transfer runs at once (a blocking get would take them
  // one after another: SimGrid starts a transfer when its send and receive have met).
  std::vector<sg4::CommPtr> receives;
  std::vector<char*> got(static_cast<size_t>(ranks - 1));
  for (int i = 1; i < ranks; ++i)
    receives.push_back(root->get_async<char>(&got[static_cast<size_t>(i - 1)]));
  sg4::Comm::wait_all(receives);
}

void mixed_actor(int rank, double bytes) {
  static char token;
  auto mailbox = [](int r) { return sg4::Mailbox::by_name("rank-" + std::to_string(r)); };
  std::vector<sg4::CommPtr> comms;
  std::vector<char*> got(2);
  if (rank == 0) {
    comms.push_back(mailbox(1)->put_async(&token, static_cast<uint64_t>(bytes)));
    comms.push_back(mailbox(2)->put_async(&token, static_cast<uint64_t>(2 * bytes)));
  } else if (rank == 3) {
    comms.push_back(mailbox(2)->put_async(&token, static_cast<uint64_t>(3 * bytes)));
  } else {
    for (int i = 0; i < rank; ++i)  // rank 1 receives one message, rank 2 two
      comms.push_back(mailbox(rank)->get_async<char>(&got[static_cast<size_t>(i)]));
  }
  sg4::Comm::wait_all(comms);
}

}  // namespace

int main(int argc, char** argv) {
  // The alpha-beta model first, so that a --cfg of the command line, parsed after it, overrides it.
  std::vector<char*> args = {argv[0], const_cast<char*>("--cfg=network/model:CM02"),
                             const_cast<char*>("--cfg=network/TCP-gamma:0"),
                             const_cast<char*>("--cfg=network/crosstraffic:0")};
  args.insert(args.end(), argv + 1, argv + argc);
  argc = static_cast<int>(args.size());
  argv = args.data();
  sg4::Engine engine(&argc, argv);  // consumes --cfg=... and --log=...
  std::string pattern = "ring";
  int first = 1;
  if (argc == 6) {
    pattern = argv[1];
    first = 2;
  }
  if (argc - first != 4 || (pattern != "ring" && pattern != "incast" && pattern != "mixed")) {
    std::fprintf(stderr,
                 "usage: %s [ring|incast|mixed] RANKS BYTES BANDWIDTH_BPS LATENCY_S [--cfg=...]\n",
                 argv[0]);
    return 2;
  }
  const int ranks = std::atoi(argv[first]);
  const double bytes = std::atof(argv[first + 1]);
  const double bandwidth_bps = std::atof(argv[first + 2]);
  const double latency_s = std::atof(argv[first + 3]);
  if (pattern == "mixed" && ranks != 4) {
    std::fprintf(stderr, "bench_simgrid_ring: mixed needs RANKS = 4\n");
    return 2;
  }
  if (ranks < 2 || bytes <= 0 || bandwidth_bps <= 0 || latency_s < 0) {
    std::fprintf(stderr,
                 "bench_simgrid_ring: need RANKS >= 2, BYTES > 0, BANDWIDTH_BPS > 0, LATENCY_S >= 0\n");
    return 2;
  }

  sg4::NetZone* star = sg4::create_star_zone("star");
  std::vector<sg4::Host*> hosts;
  for (int i = 0; i < ranks; ++i) {
    sg4::Host* host = star->create_host("host-" + std::to_string(i), 1e12);
    sg4::SplitDuplexLink* nic =
        star->create_split_duplex_link("nic-" + std::to_string(i), bandwidth_bps / 8);
    nic->set_latency(latency_s);
    nic->seal();
    // To the star's centre over the up link; the route back (symmetrical) takes the down link.
    star->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                    {{nic, sg4::LinkInRoute::Direction::UP}}, true);
    hosts.push_back(host);
  }
  star->seal();

  for (int i = 0; i < ranks; ++i) {
    sg4::Host* host = hosts[static_cast<size_t>(i)];
    if (pattern == "ring")
      sg4::Actor::create("rank-" + std::to_string(i), host, rank_actor, i, ranks, bytes / ranks);
    else if (pattern == "incast")
      sg4::Actor::create("rank-" + std::to_string(i), host, incast_actor, i, ranks, bytes);
    else
      sg4::Actor::create("rank-" + std::to_string(i), host, mixed_actor, i, bytes);
  }
  engine.run();
  std::printf("{\"pattern\": \"%s\", \"ranks\": %d, \"bytes\": %.0f, \"simulated_s\": %.12g}\n",
              pattern.c_str(), ranks, bytes, sg4::Engine::get_clock());
  return 0;
}
