#include "diagnosis/rule_registry.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>
#include <typeindex>
#include <unordered_map>

namespace ferret {

// The families the build found in the rules_*.cpp files (generated/rule_families.inc).
#define FERRET_LISTED_RULE_FAMILY(symbol) extern const RuleFamily kRuleFamily_##symbol;
#include "rule_families.inc"
#undef FERRET_LISTED_RULE_FAMILY

namespace {

#define FERRET_LISTED_RULE_FAMILY(symbol) &kRuleFamily_##symbol,
const RuleFamily* const kListedFamilies[] = {
#include "rule_families.inc"
};
#undef FERRET_LISTED_RULE_FAMILY

struct Registry {
  std::vector<const RuleFamily*> families;
  std::vector<RuleInfo> rows;
  std::unordered_map<std::string_view, std::size_t> index;                     // id -> row
  std::unordered_map<std::string_view, std::vector<std::string_view>> causes;  // symptom -> its explainers
};

// Families by input, then order: the run order, and so the rows' order. Families of one input
// with one order would run in an order the build chose: an error, as is an id registered twice.
Registry build_registry() {
  Registry r;
  r.families.assign(std::begin(kListedFamilies), std::end(kListedFamilies));
  const auto input = [](const RuleFamily* f) {
    return f->run.input != nullptr ? std::type_index(*f->run.input) : std::type_index(typeid(void));
  };
  for (const RuleFamily* f : r.families)
    if (f->rules.empty() || f->run.call == nullptr)
      throw std::logic_error("rule family " + std::string(f->name) + " has no rows or no run");
  const auto key = [&](const RuleFamily* f) {
    return std::tuple(f->rules.front().source, input(f), f->phase, f->order);
  };
  std::sort(r.families.begin(), r.families.end(),
            [&](const RuleFamily* a, const RuleFamily* b) { return key(a) < key(b); });
  for (std::size_t i = 1; i < r.families.size(); ++i) {
    const RuleFamily& a = *r.families[i - 1];
    const RuleFamily& b = *r.families[i];
    if (input(&a) == input(&b) && a.phase == b.phase && a.order == b.order)
      throw std::logic_error("rule families " + std::string(a.name) + " and " + std::string(b.name) +
                             " run on one input with one order");
  }
  for (const RuleFamily* f : r.families)
    for (const RuleInfo& row : f->rules) {
      if (!r.index.emplace(row.id, r.rows.size()).second)
        throw std::logic_error("rule id registered twice: " + std::string(row.id));
      r.rows.push_back(row);
    }
  for (const RuleInfo& row : r.rows)
    for (std::string_view symptom : row.explains) r.causes[symptom].push_back(row.id);
  return r;
}

const Registry& registry() {
  static const Registry r = build_registry();
  return r;
}

}  // namespace

std::span<const RuleInfo> rule_registry() { return registry().rows; }

std::span<const RuleFamily* const> rule_families() { return registry().families; }

const RuleInfo* find_rule(std::string_view id) {
  const Registry& r = registry();
  const auto it = r.index.find(id);
  return it == r.index.end() ? nullptr : &r.rows[it->second];
}

bool explains(const RuleInfo& rule, std::string_view symptom_id) {
  return std::find(rule.explains.begin(), rule.explains.end(), symptom_id) != rule.explains.end();
}

std::span<const std::string_view> causes_of(std::string_view symptom_id) {
  const Registry& r = registry();
  const auto it = r.causes.find(symptom_id);
  if (it == r.causes.end()) return {};
  return it->second;
}

Finding finding_for(std::string_view id) {
  const RuleInfo* rule = find_rule(id);
  if (rule == nullptr) throw std::logic_error("finding_for: rule id not in the registry: " + std::string(id));
  Finding f;
  f.id = std::string(rule->id);
  f.dimension = rule->dimension;
  f.cause = std::string(rule->cause_key);
  return f;
}

const char* rule_role_name(RuleRole r) {
  switch (r) {
    case RuleRole::kCause: return "cause";
    case RuleRole::kSymptom: return "symptom";
    case RuleRole::kWindow: return "window";
  }
  return "cause";
}

}  // namespace ferret
