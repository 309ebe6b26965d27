// What a parse could not check, reported so that it is never silently passed
// (check.h): statics in preprocessor branches the parse skipped, and data a
// top-level asm statement may define. Each is a finding a consumer fixes,
// checks under other defines, or lists in the baseline.
#include <algorithm>
#include <string>
#include <vector>

#include "clang/AST/Decl.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/Expr.h"
#include "clang/Basic/Diagnostic.h"
#include "lint/statics/check.h"
#include "lint/statics/inactive_branches.h"
#include "lint/statics/source_text.h"
#include "lint/statics/type_shapes.h"

namespace atlas_lint {
namespace {

struct Body {
  clang::SourceRange Range;
  std::string Name;  // empty for a record's body: its members are no statics
};

// The bodies of the function and record definitions outside system headers:
// an inactive branch in a function holds its static locals; one in a record
// holds members, no statics.
void CollectBodies(const clang::DeclContext *DC, const SourceManager &SM,
                   std::vector<Body> *Out) {
  for (const clang::Decl *D : DC->decls()) {
    if (D->isImplicit() || FoundInSystemDir(D->getLocation(), SM)) continue;
    if (const auto *FT = llvm::dyn_cast<clang::FunctionTemplateDecl>(D)) {
      D = FT->getTemplatedDecl();
    }
    if (const auto *FD = llvm::dyn_cast<clang::FunctionDecl>(D)) {
      if (FD->doesThisDeclarationHaveABody() && FD->getBody() != nullptr) {
        Out->push_back(
            {FD->getBody()->getSourceRange(), FD->getQualifiedNameAsString()});
      }
      continue;
    }
    if (const auto *Tag = llvm::dyn_cast<clang::TagDecl>(D)) {
      if (Tag->isThisDeclarationADefinition()) {
        Out->push_back({Tag->getBraceRange(), ""});
      }
    }
    if (const auto *Inner = llvm::dyn_cast<clang::DeclContext>(D)) {
      if (llvm::isa<clang::NamespaceDecl>(D) ||
          llvm::isa<clang::LinkageSpecDecl>(D) ||
          llvm::isa<clang::RecordDecl>(D)) {
        CollectBodies(Inner, SM, Out);
      }
    }
  }
}

// The innermost function or record body that holds Loc, or null at file
// scope.
const Body *BodyAt(SourceLocation Loc, const std::vector<Body> &Bodies,
                   const SourceManager &SM) {
  const Body *Inner = nullptr;
  SourceLocation Begin;
  for (const Body &B : Bodies) {
    SourceLocation BB = SM.getExpansionLoc(B.Range.getBegin());
    SourceLocation BE = SM.getExpansionLoc(B.Range.getEnd());
    if (SM.getFileID(BB) != SM.getFileID(Loc)) continue;
    if (SM.isBeforeInTranslationUnit(Loc, BB) ||
        SM.isBeforeInTranslationUnit(BE, Loc)) {
      continue;
    }
    if (Inner == nullptr || SM.isBeforeInTranslationUnit(Begin, BB)) {
      Inner = &B;
      Begin = BB;
    }
  }
  return Inner;
}

// Data an assembler statement may define: section switches and data
// directives.
bool DefinesData(StringRef Asm) {
  for (const char *D :
       {".data", ".bss", ".comm", ".lcomm", ".section", ".byte", ".short",
        ".word", ".long", ".int", ".quad", ".zero", ".space", ".ascii",
        ".asciz", ".string", ".fill", ".skip"}) {
    if (Asm.contains(D)) return true;
  }
  return false;
}

}  // namespace

// A file-scope variable of that name the parse saw (an #ifdef that declares
// one object two ways, or only redeclares it): checked there.
bool StrayStaticsCheck::DeclaredActive(const std::string &Name) const {
  const clang::TranslationUnitDecl *TU = Context->getTranslationUnitDecl();
  for (const clang::NamedDecl *D : TU->lookup(&Context->Idents.get(Name))) {
    if (llvm::isa<VarDecl>(D)) return true;
  }
  return false;
}

void StrayStaticsCheck::ReportUnchecked() {
  const SourceManager &SM = Context->getSourceManager();
  for (const clang::Decl *D : Context->getTranslationUnitDecl()->decls()) {
    const auto *Asm = llvm::dyn_cast<clang::FileScopeAsmDecl>(D);
    if (Asm == nullptr) continue;
    SourceLocation At = SM.getExpansionLoc(Asm->getBeginLoc());
    if (At.isInvalid() || FoundInSystemDir(At, SM)) continue;
    if (!DefinesData(Asm->getAsmString()->getString())) continue;
    diag(At,
         "static '<asm>' is not checked: a top-level asm statement here "
         "defines data the check cannot see; define the data in C or list "
         "it in the baseline",
         clang::DiagnosticIDs::Error);
  }
  ReportInactiveBranches(SM);
}

void StrayStaticsCheck::ReportInactiveBranches(const SourceManager &SM) {
  std::vector<Body> Bodies;
  bool Collected = false;
  for (const clang::SourceRange &R : Facts.Skipped) {
    SourceLocation Begin = R.getBegin();
    if (!Begin.isFileID() || FoundInSystemDir(Begin, SM)) continue;
    std::pair<clang::FileID, unsigned> B = SM.getDecomposedLoc(Begin);
    std::pair<clang::FileID, unsigned> E =
        SM.getDecomposedLoc(SM.getExpansionLoc(R.getEnd()));
    bool Invalid = false;
    StringRef Buf = SM.getBufferData(B.first, &Invalid);
    if (Invalid || E.first != B.first || E.second <= B.second) continue;
    size_t LineEnd = Buf.find('\n', B.second);
    if (LineEnd == StringRef::npos || LineEnd >= E.second) continue;
    StringRef Directive = Buf.slice(B.second, LineEnd).trim();
    if (Directive.size() > 60) Directive = Directive.take_front(60);
    StringRef Text = Buf.slice(LineEnd, E.second);
    if (!Collected) {
      CollectBodies(Context->getTranslationUnitDecl(), SM, &Bodies);
      Collected = true;
    }
    const Body *In = BodyAt(Begin, Bodies, SM);
    if (In != nullptr && In->Name.empty()) continue;  // members of a record
    const std::string Fn = In != nullptr ? In->Name : "";
    for (const InactiveStatic &S :
         ScanInactiveBranch(Text, Fn, Context->getLangOpts())) {
      if (Fn.empty() && DeclaredActive(S.Name)) continue;
      std::string Subject = "'" + S.Name + "'";
      if (!S.Function.empty()) {
        Subject += " in function '" + S.Function + "'";
      }
      diag(SM.getComposedLoc(B.first, LineEnd + S.Offset),
           "static %0 is not checked: it is in a preprocessor branch this "
           "parse skipped ('%1' at line %2); build it under the defines that "
           "take the branch, or list it in the baseline",
           clang::DiagnosticIDs::Error)
          << Subject << Directive << SM.getLineNumber(B.first, B.second);
    }
  }
}

}  // namespace atlas_lint
