// What the preprocessor saw that the AST no longer shows: each expansion of
// ATLAS_STATIC, the lines of `#pragma clang attribute`, and the ranges of
// inactive preprocessor branches.
#ifndef ATLAS_LINT_STATICS_PP_FACTS_H_
#define ATLAS_LINT_STATICS_PP_FACTS_H_

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "clang/Basic/SourceManager.h"
#include "clang/Lex/MacroInfo.h"
#include "clang/Lex/PPCallbacks.h"

namespace atlas_lint {

constexpr char kMarkMacro[] = "ATLAS_STATIC";

struct PPFacts {
  std::map<unsigned, bool> MarkExpansions;  // spelling of the name -> genuine
  std::set<std::pair<unsigned, unsigned>>
      PragmaAttributeLines;  // (FileID hash, line)
  // Ranges the preprocessor skipped (#if 0, the untaken side of #ifdef, ...):
  // from the directive's '#' to the end of the branch.
  std::vector<clang::SourceRange> Skipped;
};

// The genuine ATLAS_STATIC: defined in a file named atlas_static.h as exactly
// __attribute__((annotate("atlas_static:" #CATEGORY))).
bool IsGenuineMark(const clang::MacroInfo *MI, const clang::SourceManager &SM);

class MarkTracker : public clang::PPCallbacks {
 public:
  MarkTracker(const clang::SourceManager &SM, PPFacts *Facts)
      : SM(SM), Facts(Facts) {}

  void MacroExpands(const clang::Token &Name, const clang::MacroDefinition &MD,
                    clang::SourceRange, const clang::MacroArgs *) override;
  // Every physical line of a `#pragma clang attribute` directive, however it
  // is spelled: any white space, comments, line continuations.
  void PragmaDirective(clang::SourceLocation Loc,
                       clang::PragmaIntroducerKind) override;
  void SourceRangeSkipped(clang::SourceRange Range,
                          clang::SourceLocation EndifLoc) override;

 private:
  const clang::SourceManager &SM;
  PPFacts *Facts;
};

}  // namespace atlas_lint

#endif  // ATLAS_LINT_STATICS_PP_FACTS_H_
