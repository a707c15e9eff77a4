#include "verify/verifier.h"

#include <sstream>

#include "support/format.h"

// Verdicts as words and as the text `mugraph verify` prints; the checks are in verifier.cc.
namespace mugraph::verify {

std::string_view verdict_name(VerdictKind k) {
  switch (k) {
    case VerdictKind::kVerified: return "VERIFIED";
    case VerdictKind::kPassed: return "PASSED";
    case VerdictKind::kNotEquivalent: return "NOT EQUIVALENT";
    case VerdictKind::kUnstable: return "UNSTABLE";
    case VerdictKind::kUnproved: return "UNPROVED";
    case VerdictKind::kInconclusive: return "INCONCLUSIVE";
    case VerdictKind::kError: return "ERROR";
  }
  return "?";
}

bool accepted(VerdictKind k) {
  return k == VerdictKind::kVerified || k == VerdictKind::kPassed || k == VerdictKind::kUnproved;
}

bool float_check_pending(std::string_view verdict_text) {
  return verdict_text.find(kFloatCheckPending) != std::string_view::npos;
}

std::string format_verdict(const Verdict& v, const ir::KernelGraph& ref, const ir::KernelGraph& cand) {
  std::ostringstream o;
  o << "verdict: " << verdict_name(v.kind) << " (" << (v.mode == Mode::kScreen ? "screen" : "certify")
    << ") - " << v.summary << "\n";
  o << "lax: " << (v.lax ? "yes" : "no, " + v.lax_note) << "\n";
  o << "tests: " << v.tests << " passed (" << v.redraws << " redrawn after a zero divisor), "
    << v.entries_compared << " output entries compared per test\n";
  if (v.mode == Mode::kCertify && v.lax && !v.bound.note.empty()) {
    if (v.bound.vacuous)
      o << "delta: no bound (" << v.bound.note << ")\n";
    else if (v.delta_achieved >= 0)
      o << "delta: " << fmt_g3(v.delta_achieved) << " achieved (per test " << fmt_g3(v.bound.epsilon) << ", "
        << v.bound.note << ")\n";
  }
  if (v.float_checked) {
    for (const auto& e : v.floats.outputs)
      o << "float: output '" << e.name << "' reference error " << fmt_g3(e.ref_err) << ", candidate error "
        << fmt_g3(e.cand_err) << " (limit " << fmt_g3(e.limit) << ") " << (e.ok ? "ok" : "REJECTED") << "\n";
    if (!v.floats.note.empty()) o << "float: " << v.floats.note << "\n";
  }
  if (!v.permutation.empty()) {
    o << "outputs:";
    for (size_t i = 0; i < v.permutation.size(); ++i)
      o << " '" << ref.tensor(ref.outputs[i]).name << "' -> '"
        << cand.tensor(cand.outputs[static_cast<size_t>(v.permutation[i])]).name << "' (#" << v.permutation[i] << ")";
    o << "\n";
  }
  o << "time: " << fmt_g3(v.seconds) << " s\n";
  return o.str();
}

}  // namespace mugraph::verify
