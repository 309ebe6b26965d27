// The source text the atlas-stray-statics check reads itself: the comment
// that argues a mark's case, and a file's path as the option regexes see it.
#ifndef ATLAS_LINT_STATICS_SOURCE_TEXT_H_
#define ATLAS_LINT_STATICS_SOURCE_TEXT_H_

#include <string>

#include "llvm/ADT/StringRef.h"

namespace atlas_lint {

// A file name as the option regexes see it: relative to the workspace root
// (the directory the check runs in: Bazel's execution root, or the current
// directory by hand) when under it, with . and .. resolved and no leading ./,
// and a generated file (bazel-out/<config>/bin/x) as its package path (x).
std::string WorkspacePath(llvm::StringRef Name);

// Finds the comment that starts on its own line and ends on the line directly
// above the line starting at DeclLineStart. Returns false when there is none;
// on success sets FirstLine to the first line of its text.
bool FindArguingComment(llvm::StringRef Buf, size_t DeclLineStart,
                        std::string *FirstLine);

}  // namespace atlas_lint

#endif  // ATLAS_LINT_STATICS_SOURCE_TEXT_H_
