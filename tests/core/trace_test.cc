#include "core/trace.h"

#include <gtest/gtest.h>

#include <sstream>

namespace bagua {
namespace {

TEST(TraceLog, FilterKeepsListedRanksAndIterations) {
  TraceFilter f;
  f.ranks = {1, 3};
  f.first_iteration = 2;
  f.last_iteration = 3;
  TraceLog log(f);
  for (int r = 0; r < 4; ++r) {
    for (int64_t k = 0; k < 5; ++k) {
      log.begin_iteration(r, k);
      log.span(r, 0, "forward", "compute", Time::us(10 * k), Time::us(10 * k + 5));
    }
  }
  // Ranks 1 and 3, iterations 2 and 3: four spans, in recording order.
  ASSERT_EQ(log.spans().size(), 4u);
  EXPECT_EQ(log.spans()[0].rank, 1);
  EXPECT_EQ(log.spans()[0].begin, Time::us(20));
  EXPECT_EQ(log.spans()[3].rank, 3);
  EXPECT_EQ(log.spans()[3].begin, Time::us(30));
  // After its last iteration began, rank 1 is in iteration 4: dropped.
  log.span(1, 0, "late", "compute", Time::us(50), Time::us(51));
  EXPECT_EQ(log.spans().size(), 4u);
  // Before its first iteration a rank is in iteration -1: dropped by a filter from 0 on, kept without.
  TraceFilter from0;
  from0.first_iteration = 0;
  TraceLog early(from0);
  early.span(0, 1, "barrier", "comm", Time::zero(), Time::ns(1));
  EXPECT_TRUE(early.spans().empty());
  TraceLog all;
  all.span(0, 1, "barrier", "comm", Time::zero(), Time::ns(1));
  EXPECT_EQ(all.spans().size(), 1u);
}

TEST(TraceLog, WritesOnlyTheKeptRanksMetadata) {
  TraceFilter f;
  f.ranks = {1};
  TraceLog log(f);
  log.span(1, 1, "allreduce bucket 0", "comm", Time::ns(1500), Time::ns(2750));
  std::ostringstream out;
  log.write(out, 3);
  EXPECT_EQ(
      out.str(),
      "{\"traceEvents\":[\n"
      "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"rank 1\"}},\n"
      "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"compute\"}},\n"
      "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":"
      "\"communication\"}},\n"
      "{\"name\":\"allreduce bucket 0\",\"cat\":\"comm\",\"ph\":\"X\",\"pid\":1,\"tid\":1,"
      "\"ts\":1.500,\"dur\":1.250}\n"
      "]}\n");
}

TEST(TraceLog, EscapesNamesAsJson) {
  TraceLog log;
  log.span(0, 0, std::string("a\"b\\c\nd\x01", 8), "compute", Time::zero(), Time::ns(1));
  std::ostringstream out;
  log.write(out, 1);
  EXPECT_NE(out.str().find(R"("name":"a\"b\\c\nd\u0001")"), std::string::npos) << out.str();
}

TEST(TraceLog, SpansRoundTripThroughBytes) {
  std::vector<TraceSpan> spans = {{0, 1, "send to 1", "comm", Time::ns(5), Time::ns(9), 4096},
                                  {2, 0, "forward conv1_1", "compute", Time::ns(-3), Time::ns(0), -1}};
  const std::vector<TraceSpan> back = deserialize_spans(serialize_spans(spans));
  ASSERT_EQ(back.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back[i].rank, spans[i].rank);
    EXPECT_EQ(back[i].track, spans[i].track);
    EXPECT_EQ(back[i].name, spans[i].name);
    EXPECT_EQ(back[i].category, spans[i].category);
    EXPECT_EQ(back[i].begin, spans[i].begin);
    EXPECT_EQ(back[i].end, spans[i].end);
    EXPECT_EQ(back[i].bytes, spans[i].bytes);
  }
}

}  // namespace
}  // namespace bagua
