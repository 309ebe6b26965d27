// Statics in preprocessor branches a parse skipped (#if 0, the untaken side
// of #ifdef, code under a macro only another compiler defines): the parse
// never sees them, so the check cannot judge them. A token scan finds the
// declarations there that look like variables with static storage, so the
// check can report each one as not checked.
#ifndef ATLAS_LINT_STATICS_INACTIVE_BRANCHES_H_
#define ATLAS_LINT_STATICS_INACTIVE_BRANCHES_H_

#include <string>
#include <vector>

#include "clang/Basic/LangOptions.h"
#include "clang/Basic/SourceLocation.h"
#include "llvm/ADT/StringRef.h"

namespace atlas_lint {

struct InactiveStatic {
  unsigned Offset;       // of the variable's name in the buffer
  std::string Name;      // the variable's name
  std::string Function;  // the enclosing function (a static local), or empty
};

// Scans Text (an inactive branch, without its opening directive line) for
// declarations of variables with static storage: at file scope (InFunction
// empty) every variable that is not const all the way (a lexical judgement:
// `const` and every `*` followed by `const`, or constexpr); in a function
// body (InFunction names it), `static` and thread-local ones. Offsets are
// relative to Text.
std::vector<InactiveStatic> ScanInactiveBranch(llvm::StringRef Text,
                                               const std::string &InFunction,
                                               const clang::LangOptions &LO);

}  // namespace atlas_lint

#endif  // ATLAS_LINT_STATICS_INACTIVE_BRANCHES_H_
