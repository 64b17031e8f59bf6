// Uses only <ferret/ferret.h> from an installed ferret.
//   consumer json PATH      prints ferret::analyze_json(PATH)
//   consumer verdict PATH   prints the verdict's rule id and each finding id, one per line
#include <ferret/ferret.h>

#include <cstring>
#include <exception>
#include <iostream>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: consumer json|verdict PATH\n";
    return 2;
  }
  try {
    if (std::strcmp(argv[1], "json") == 0) {
      std::cout << ferret::analyze_json(argv[2]);
      return 0;
    }
    const ferret::Trace trace = ferret::load(argv[2]);
    const ferret::Analysis analysis = ferret::analyze(trace);
    std::cout << "verdict " << analysis.verdict_id() << '\n';
    for (const ferret::FindingSummary& f : analysis.findings()) std::cout << "finding " << f.id << '\n';
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "consumer: " << e.what() << '\n';
    return 1;
  }
}
