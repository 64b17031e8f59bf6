// The pieces of retime_steps' sweep (step_graph.cpp), apart so that the sweep reads as its steps:
// the flags memoised per interned name, each host thread's clock, each stream's re-timed history,
// the items the sweep visits. Internal to analysis/causal; nothing else includes this.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "model/trace_model.h"

namespace ferret::retime_parts {

// Per-name facts, memoised by interned name (names repeat millions of times).
enum StepNameFlag : std::uint16_t {
  kNameKnown = 1,
  kNameSyncCall = 2,           // *Synchronize, synchronous memcpy/memset calls
  kNameSyncOp = 4,             // aten::item, aten::_local_scalar_dense
  kNameLaunch = 8,             // kernel / graph launches, async copies and fills
  kNameLoader = 16,            // enumerate(DataLoader)#...
  kNameGloo = 32,              // gloo collectives: communication run on the host
  kNameStep = 64,              // ProfilerStep#N
  kNameCopyLaunch = 128,       // an async copy launch (may block: a copy to pageable memory)
  kNameSyncCopy = 256,         // a synchronous memcpy / memset call
  kNameCommKernel = 512,       // an NCCL / RCCL communication kernel
  kNamePageableUpload = 1024,  // a host-to-device copy from pageable memory
  kNameHandOver = 2048,        // c10d::*: a thread handing a collective to its process group
};

// The host clock of one thread: original time -> re-timed time. Outside a changed region it is a
// shift; inside one (the outermost shortened span or synchronising call) a linear map.
// With the host's overhead removed (RetimeChanges::remove_host_overhead) time outside a region
// stops passing: the clock holds at the end of the latest region it kept.
// A thread woken by a collective's completion runs its next recorded operator within this: a
// condition variable's wake-up takes microseconds and the Python before the next operator tens to
// hundreds, but on a host whose cores the ranks share the woken thread waits for a core too (0.03
// to 11 ms on the project's two-rank DDP-over-gloo sample, recorded on two cores). ferret's bound.
constexpr std::int64_t kGlooWakeNs = 20'000'000;

struct ThreadClock {
  std::int64_t shift = 0;
  std::int64_t last_top_end = INT64_MIN;  // end of its latest top-level span
  std::int64_t last_end = INT64_MIN;      // end of its latest span of work (steps are not work)
  std::int64_t handed_over = INT64_MAX;   // start of its first c10d:: operator (a collective handed over)
  bool active = false;
  bool sync = false;            // the active region is a synchronising call
  bool held = false;            // time outside regions does not pass
  std::int64_t at = INT64_MIN;  // held: the re-timed time it stands at (INT64_MIN: not yet placed)
  std::int64_t a = 0, a_new = 0, until = 0, until_new = 0;
  double factor = 1;

  std::int64_t map(std::int64_t t) {
    if (active && t >= until) {
      shift = until_new - until;
      at = until_new;
      active = false;
    }
    if (!active && held) {
      if (at == INT64_MIN) at = t + shift;
      return at;
    }
    if (!active) return t + shift;
    if (sync) return std::min(a_new + (t - a), until_new);
    return a_new + std::llround(static_cast<double>(t - a) * factor);
  }
  void begin(std::int64_t start, std::int64_t start_new, std::int64_t end, std::int64_t end_new, bool is_sync) {
    active = true;
    sync = is_sync;
    a = start;
    a_new = start_new;
    until = end;
    until_new = end_new;
    factor = end > start ? static_cast<double>(end_new - start_new) / static_cast<double>(end - start) : 1.0;
  }
};

// One stream's re-timed history: original and re-timed ends in the order re-timed.
struct StreamState {
  std::vector<std::int64_t> end;
  std::vector<std::int64_t> end_new;
  std::vector<std::uint32_t> node;
};

struct SweepItem {
  std::int64_t ts;
  std::int64_t dur;
  EventIndex event;     // host span, unmatched GPU activity, or kNoEvent for a point
  std::uint32_t point;  // index into points when event == kNoEvent
};

struct Point {
  std::uint64_t thread;
  std::int64_t t;
  std::int64_t mapped = 0;
};

}  // namespace ferret::retime_parts
