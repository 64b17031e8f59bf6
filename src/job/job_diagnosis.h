// Diagnosis of a distributed job as a whole: stragglers with their cause, exposed communication
// on the typical rank, collectives that mostly wait, and transfers slower than the link. Each
// rule is in rules_job.cpp with its threshold and the threshold's source.
#pragma once

#include <string>
#include <vector>

#include "diagnosis/diagnose.h"
#include "job/job_analysis.h"

namespace ferret {

struct JobDiagnosis {
  std::vector<Finding> findings;  // the verdict first, then ranked, as for one trace (verdict.h)
  Verdict verdict;
  // The ranks' own verdicts, most common first: (finding id or "" for none, ranks, an example title).
  struct RankVerdicts {
    std::string finding_id;
    std::string title;  // the first such rank's title
    std::vector<int> ranks;
  };
  std::vector<RankVerdicts> rank_verdicts;
};

JobDiagnosis diagnose_job(const JobAnalysis& job);

}  // namespace ferret
