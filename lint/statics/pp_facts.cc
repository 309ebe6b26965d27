// The preprocessor facts of the atlas-stray-statics check (pp_facts.h).
#include "lint/statics/pp_facts.h"

#include <cctype>
#include <string>

#include "clang/Basic/IdentifierTable.h"
#include "clang/Basic/TokenKinds.h"
#include "clang/Lex/Token.h"
#include "llvm/ADT/StringRef.h"

namespace atlas_lint {

using clang::SourceLocation;
using clang::SourceManager;
using llvm::StringRef;

bool IsGenuineMark(const clang::MacroInfo *MI, const SourceManager &SM) {
  if (MI == nullptr) return false;
  StringRef File = SM.getFilename(SM.getSpellingLoc(MI->getDefinitionLoc()));
  if (!File.endswith("atlas_static.h")) return false;
  static const char *const kBody[] = {
      "__attribute__", "(", "(", "annotate", "(", "\"atlas_static:\"", "#",
      "CATEGORY",      ")", ")", ")"};
  if (MI->getNumParams() != 1 || MI->getNumTokens() != 11) return false;
  unsigned I = 0;
  for (const clang::Token &Tok : MI->tokens()) {
    std::string Spelled;
    if (const clang::IdentifierInfo *II = Tok.getIdentifierInfo()) {
      Spelled = II->getName().str();
    } else if (Tok.isLiteral()) {
      Spelled = std::string(Tok.getLiteralData(), Tok.getLength());
    } else if (const char *P =
                   clang::tok::getPunctuatorSpelling(Tok.getKind())) {
      Spelled = P;
    }
    if (Spelled != kBody[I++]) return false;
  }
  return true;
}

void MarkTracker::MacroExpands(const clang::Token &Name,
                               const clang::MacroDefinition &MD,
                               clang::SourceRange, const clang::MacroArgs *) {
  const clang::IdentifierInfo *II = Name.getIdentifierInfo();
  if (II == nullptr || II->getName() != kMarkMacro) return;
  Facts
      ->MarkExpansions[SM.getSpellingLoc(Name.getLocation()).getRawEncoding()] =
      IsGenuineMark(MD.getMacroInfo(), SM);
}

void MarkTracker::PragmaDirective(SourceLocation Loc,
                                  clang::PragmaIntroducerKind) {
  if (!Loc.isFileID()) return;
  bool Invalid = false;
  std::pair<clang::FileID, unsigned> D = SM.getDecomposedLoc(Loc);
  StringRef Buf = SM.getBufferData(D.first, &Invalid);
  if (Invalid) return;
  // The logical line: up to a newline not escaped by a backslash.
  size_t End = D.second;
  while (End < Buf.size() && Buf[End] != '\n') {
    if (Buf[End] == '\\') {
      size_t Next = End + 1;
      if (Next < Buf.size() && Buf[Next] == '\r') ++Next;
      if (Next < Buf.size() && Buf[Next] == '\n') {
        End = Next + 1;
        continue;
      }
    }
    ++End;
  }
  StringRef Line = Buf.slice(D.second, End);
  // Words, with continuations, comments and any white space as separators.
  std::string Words;
  for (size_t I = 0; I < Line.size(); ++I) {
    char C = Line[I];
    if (C == '/' && I + 1 < Line.size() && Line[I + 1] == '*') {
      size_t Close = Line.find("*/", I + 2);
      I = Close == StringRef::npos ? Line.size() : Close + 1;
      C = ' ';
    } else if (C == '/' && I + 1 < Line.size() && Line[I + 1] == '/') {
      break;
    } else if (C == '\\' || isspace(static_cast<unsigned char>(C))) {
      C = ' ';
    }
    if (C == ' ' && (Words.empty() || Words.back() == ' ')) continue;
    Words += C;
  }
  StringRef J(Words);
  J = J.ltrim();
  J.consume_front("#");
  J = J.ltrim();
  if (!J.consume_front("pragma ")) return;
  J = J.ltrim();
  if (!J.consume_front("clang ")) return;
  if (!J.ltrim().startswith("attribute")) return;
  unsigned First = SM.getLineNumber(D.first, D.second);
  unsigned Last = SM.getLineNumber(D.first, End > D.second ? End - 1 : End);
  for (unsigned L = First; L <= Last; ++L) {
    Facts->PragmaAttributeLines.insert({D.first.getHashValue(), L});
  }
}

void MarkTracker::SourceRangeSkipped(clang::SourceRange Range, SourceLocation) {
  Facts->Skipped.push_back(Range);
}

}  // namespace atlas_lint
