// Source text the atlas-stray-statics check reads itself (source_text.h).
#include "lint/statics/source_text.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

namespace atlas_lint {

using llvm::StringRef;

namespace {

StringRef RTrim(StringRef S) { return S.rtrim(" \t\r\f\v"); }

// The text of the line starting at LineStart, without its newline.
StringRef LineText(StringRef Buf, size_t LineStart) {
  size_t End = Buf.find('\n', LineStart);
  if (End == StringRef::npos) End = Buf.size();
  return Buf.slice(LineStart, End);
}

// Offset of the start of the line before the one starting at LineStart, or
// npos when LineStart is the first line.
size_t PrevLineStart(StringRef Buf, size_t LineStart) {
  if (LineStart == 0) return StringRef::npos;
  size_t NlBefore = LineStart - 1;          // the '\n' ending the previous line
  size_t Prev = Buf.rfind('\n', NlBefore);  // searches [0, NlBefore)
  return Prev == StringRef::npos ? 0 : Prev + 1;
}

StringRef StripCommentLeader(StringRef S) {
  S = S.ltrim();
  S = S.ltrim("/*!<");
  return RTrim(S.trim());
}

bool HasArgument(StringRef Text) {
  // A comment that only says NOLINT, or the fix-it's template, argues nothing.
  if (Text.contains("TODO(atlas-stray-statics)")) return false;
  std::string Rest;
  for (char Ch : Text) {
    if ((Ch >= 'a' && Ch <= 'z') || (Ch >= 'A' && Ch <= 'Z'))
      Rest.push_back(Ch);
  }
  StringRef R(Rest);
  while (R.consume_front("NOLINTNEXTLINE") || R.consume_front("NOLINTBEGIN") ||
         R.consume_front("NOLINTEND") || R.consume_front("NOLINT") ||
         R.consume_front("atlasstraystatics")) {
  }
  return !R.empty();
}

// Finds the comment that starts on its own line and ends on the line directly
// above the line starting at DeclLineStart. Returns false when there is none;
// on success sets FirstLine to the first line of its text.
}  // namespace

bool FindArguingComment(StringRef Buf, size_t DeclLineStart,
                        std::string *FirstLine) {
  size_t Prev = PrevLineStart(Buf, DeclLineStart);
  if (Prev == StringRef::npos) return false;
  StringRef Line = RTrim(LineText(Buf, Prev));
  StringRef Lead = Line.ltrim();
  if (Lead.startswith("//")) {
    // A run of // lines; every one of them is on its own line.
    size_t Top = Prev;
    for (;;) {
      size_t Up = PrevLineStart(Buf, Top);
      if (Up == StringRef::npos) break;
      if (!LineText(Buf, Up).ltrim().startswith("//")) break;
      Top = Up;
    }
    std::string All;
    bool Found = false;
    for (size_t At = Top; At <= Prev && At < Buf.size();) {
      StringRef L = LineText(Buf, At);
      StringRef Text = StripCommentLeader(L.ltrim().drop_front(2));
      if (!Found && !Text.empty()) {
        *FirstLine = Text.str();
        Found = true;
      }
      All += Text.str();
      All += ' ';
      At += L.size() + 1;
    }
    return Found && HasArgument(All);
  }
  if (Line.endswith("*/")) {
    size_t EndAbs = Prev + Line.size() - 2;
    size_t Open = Buf.substr(0, EndAbs).rfind("/*");
    if (Open == StringRef::npos) return false;
    size_t OpenLineStart = Buf.rfind('\n', Open);
    OpenLineStart = OpenLineStart == StringRef::npos ? 0 : OpenLineStart + 1;
    if (!Buf.slice(OpenLineStart, Open).trim().empty()) return false;
    StringRef Body = Buf.slice(Open + 2, EndAbs);
    if (!HasArgument(Body)) return false;
    StringRef Rest = Body;
    while (!Rest.empty()) {
      std::pair<StringRef, StringRef> Split = Rest.split('\n');
      StringRef Text = StripCommentLeader(Split.first);
      if (!Text.empty()) {
        *FirstLine = Text.str();
        return true;
      }
      Rest = Split.second;
    }
    return false;
  }
  return false;
}

std::string WorkspacePath(StringRef Name) {
  llvm::SmallString<256> P(Name);
  llvm::sys::path::remove_dots(P, /*remove_dot_dot=*/true);
  std::string Out(P.str());
  if (llvm::sys::path::is_absolute(Out)) {
    // clang-tidy names files by absolute paths; the regexes are written
    // against the workspace's own (the directory the check runs in).
    llvm::SmallString<256> Cwd, RealCwd, Real;
    if (!llvm::sys::fs::current_path(Cwd)) {
      llvm::sys::fs::real_path(Cwd, RealCwd);
      llvm::sys::fs::real_path(Out, Real);
      for (StringRef Root : {StringRef(Cwd), StringRef(RealCwd)}) {
        for (StringRef Path : {StringRef(Out), StringRef(Real)}) {
          if (!Root.empty() && Path.startswith(Root) &&
              Path.size() > Root.size() && Path[Root.size()] == '/') {
            Out = Path.drop_front(Root.size() + 1).str();
            goto Relative;
          }
        }
      }
    }
  }
Relative:
  StringRef R(Out);
  while (R.consume_front("./")) {
  }
  // A generated file is named by its package path, as Bazel's short_path.
  llvm::SmallVector<StringRef, 4> Parts;
  if (llvm::Regex("^bazel-out/[^/]+/bin/(.*)$").match(R, &Parts)) {
    return Parts[1].str();
  }
  return R.str();
}

}  // namespace atlas_lint
