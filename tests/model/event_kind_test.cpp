// Event kinds by phase, category and (for MTIA's command-processor activities) name.
#include "model/event_kind.h"

#include <gtest/gtest.h>

#include "ingest/trace_loader.h"
#include "model/trace_model.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace event_kind_test {

TEST(EventKind, MtiaActivitiesByName) {
  EXPECT_EQ(classify_event('X', "mtia_ccp_events", true, "event_wait"), EventKind::kSync);
  EXPECT_EQ(classify_event('X', "mtia_ccp_events", true, "dma_request"), EventKind::kMemcpy);
  EXPECT_EQ(classify_event('X', "mtia_ccp_events", true, "event_record"), EventKind::kCudaEvent);
  EXPECT_EQ(classify_event('X', "mtia_ccp_events", true, "merge"), EventKind::kKernel);
  // The names mean this only in MTIA's category.
  EXPECT_EQ(classify_event('X', "kernel", true, "event_wait"), EventKind::kKernel);
  EXPECT_EQ(classify_event('X', "cuda_runtime", true, "dma_request"), EventKind::kCudaRuntime);
}

// A wait is not device work: an MTIA device whose stream waits 900 us and runs a 100 us kernel is
// busy 100 us, not 1 ms.
TEST(EventKind, AnMtiaWaitIsNotDeviceWork) {
  const TraceModel m = load_trace_text(test::trace({
      test::span("mtia_ccp_events", "event_wait", 0, 5, 0, 900),
      test::span("mtia_ccp_events", "merge", 0, 5, 900, 100),
  }));
  std::int64_t busy = 0;
  for (std::size_t e = 0; e < m.size(); ++e)
    if (is_device_work(m.kind[e])) busy += m.dur_ns[e];
  EXPECT_EQ(busy, 100'000);
  EXPECT_EQ(m.info.platform, Platform::kMtia);
}

}  // namespace event_kind_test
}  // namespace
}  // namespace ferret
