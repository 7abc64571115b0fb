// What a collective really sends, for the catalogue tests (cost_test.cc, nccl_cost_test.cc): `body` runs
// on `ranks` ranks of `backend` through RecordingTransports on meta buffers; the cost is the latest
// step of any message and the bytes of the rank that sends the most.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/collectives/cost.h"
#include "tests/core/collectives/recording_transport.h"
#include "tests/support/worlds.h"

namespace bagua::collectives {

inline WireCost measure_wire_cost(testing::Backend backend, int ranks, int ranks_per_host,
                                  const std::function<void(Transport&)>& body) {
  auto ledger = std::make_shared<testing::Ledger>();
  std::vector<testing::RankRecord> records(static_cast<size_t>(ranks));
  testing::run_ranks(
      backend, ranks,
      [&](RankContext& ctx) {
        testing::RecordingTransport t(ctx.transport(), ledger,
                                      &records[static_cast<size_t>(ctx.transport().rank())]);
        body(t);
      },
      ranks_per_host);
  WireCost cost;
  for (const testing::RankRecord& r : records) {
    cost.steps = std::max(cost.steps, r.clock);
    cost.sent = std::max(cost.sent, Bytes(r.bytes));
  }
  return cost;
}

inline std::string show(const WireCost& c) {
  return std::to_string(c.steps) + " steps, " + std::to_string(c.sent.count()) + " bytes";
}

}  // namespace bagua::collectives
