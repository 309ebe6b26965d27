// Emitting the check's findings, with their fix-its and notes (check.h).
#include <set>
#include <string>
#include <utility>

#include "clang/AST/Expr.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Analysis/Analyses/ExprMutationAnalyzer.h"
#include "clang/Basic/Diagnostic.h"
#include "clang/Lex/Lexer.h"
#include "lint/statics/check.h"

namespace atlas_lint {
namespace {

// Statics the const fix-it may touch: nothing outside this translation unit
// can write them (internal linkage, or a static local).
bool ConstCandidate(const VarDecl *VD, const ASTContext &Ctx) {
  if (VD->getLocation().isMacroID() || VD->getTypeSpecStartLoc().isMacroID()) {
    return false;
  }
  if (!VD->isLocalVarDecl() && VD->isExternallyVisible()) return false;
  QualType T = VD->getType();
  if (T->isReferenceType() || T.isVolatileQualified()) return false;
  QualType Base = Ctx.getBaseElementType(T);
  if (Base->isPointerType() || Base.isVolatileQualified() ||
      Base->isAtomicType() || Base->getAs<clang::AtomicType>() != nullptr) {
    return false;
  }
  if (const auto *RD = Base->getAsCXXRecordDecl()) {
    // A class may write itself in a const-less member call: leave it alone.
    if (RD->hasDefinition() && !RD->isAggregate()) return false;
  }
  // C++ const objects need an initializer.
  if (Ctx.getLangOpts().CPlusPlus && !VD->hasInit()) return false;
  return true;
}

// Whether anything in the translation unit may write VD: ExprMutationAnalyzer
// over each function body that names it; a reference outside any function
// (an initializer taking its address) counts as a write.
class WriteFinder : public clang::RecursiveASTVisitor<WriteFinder> {
 public:
  WriteFinder(ASTContext &Ctx, const std::set<const VarDecl *> &Vars)
      : Ctx(Ctx), Vars(Vars) {}

  bool TraverseFunctionDecl(clang::FunctionDecl *FD) {
    if (InFunction || !FD->doesThisDeclarationHaveABody()) {
      return clang::RecursiveASTVisitor<WriteFinder>::TraverseFunctionDecl(FD);
    }
    InFunction = true;
    Named.clear();
    clang::RecursiveASTVisitor<WriteFinder>::TraverseFunctionDecl(FD);
    InFunction = false;
    if (!Named.empty()) {
      clang::ExprMutationAnalyzer A(*FD->getBody(), Ctx);
      for (const VarDecl *V : Named) {
        if (Written.count(V) == 0 && A.isMutated(V)) Written.insert(V);
      }
    }
    return true;
  }
  bool TraverseCXXMethodDecl(clang::CXXMethodDecl *MD) {
    return TraverseFunctionDecl(MD);
  }

  bool VisitDeclRefExpr(clang::DeclRefExpr *E) {
    const auto *V = llvm::dyn_cast<VarDecl>(E->getDecl());
    if (V == nullptr) return true;
    for (const VarDecl *Want : Vars) {
      if (Want->getCanonicalDecl() != V->getCanonicalDecl()) continue;
      if (InFunction) {
        Named.insert(Want);
      } else {
        Written.insert(Want);  // e.g. an initializer taking its address
      }
    }
    return true;
  }

  std::set<const VarDecl *> Written;

 private:
  ASTContext &Ctx;
  const std::set<const VarDecl *> &Vars;
  std::set<const VarDecl *> Named;
  bool InFunction = false;
};

}  // namespace

void StrayStaticsCheck::Emit(const Finding &F, bool OfferConst) {
  const SourceManager &SM = Context->getSourceManager();
  const clang::LangOptions &LO = Context->getLangOpts();
  const VarDecl *VD = F.VD;
  {
    auto D = diag(F.At, F.Message, clang::DiagnosticIDs::Error);
    if (OfferConst) {
      D << clang::FixItHint::CreateInsertion(VD->getTypeSpecStartLoc(),
                                             "const ");
    } else if (!F.FitsCategory.empty() && VD->getBeginLoc().isFileID()) {
      // Insert the mark and a comment template at the start of the line.
      SourceLocation Begin = VD->getBeginLoc();
      std::pair<clang::FileID, unsigned> Dec = SM.getDecomposedLoc(Begin);
      bool Invalid = false;
      StringRef Buf = SM.getBufferData(Dec.first, &Invalid);
      if (!Invalid) {
        size_t LineStart = Buf.rfind('\n', Dec.second);
        LineStart = LineStart == StringRef::npos ? 0 : LineStart + 1;
        StringRef Indent = Buf.slice(LineStart, Dec.second);
        if (Indent.trim().empty()) {
          SourceLocation LineLoc =
              Begin.getLocWithOffset(-static_cast<int>(Dec.second - LineStart));
          D << clang::FixItHint::CreateInsertion(
              LineLoc, Indent.str() + "// " + kCommentTemplate + " (" +
                           F.FitsCategory + ").\n");
          D << clang::FixItHint::CreateInsertion(
              Begin, "ATLAS_STATIC(" + F.FitsCategory + ") ");
        }
      }
    }
  }
  if (VD->getLocation().isMacroID()) {
    std::string Macro = OutermostMacro(VD->getLocation(), SM, LO);
    diag(SM.getSpellingLoc(VD->getLocation()),
         "'%0' is declared by macro '%1'; it is reported at each expansion",
         clang::DiagnosticIDs::Note)
        << VD->getName() << Macro;
  }
  // Spelled in a file other than the one being checked (a textual include,
  // a header): say through which include it was reached.
  clang::FileID FID = SM.getFileID(F.At);
  if (FID != SM.getMainFileID()) {
    SourceLocation Inc = SM.getIncludeLoc(FID);
    while (Inc.isValid()) {
      diag(Inc, "the static is spelled in '%0', included here",
           clang::DiagnosticIDs::Note)
          << SM.getFilename(F.At);
      clang::FileID Up = SM.getFileID(Inc);
      if (Up == SM.getMainFileID()) break;
      Inc = SM.getIncludeLoc(Up);
    }
  }
}

void StrayStaticsCheck::onEndOfTranslationUnit() {
  if (Context == nullptr) {
    Findings.clear();
    return;
  }
  std::set<const VarDecl *> Candidates;
  for (const Finding &F : Findings) {
    if (F.Stray && F.VD != nullptr && ConstCandidate(F.VD, *Context)) {
      Candidates.insert(F.VD);
    }
  }
  std::set<const VarDecl *> Written;
  if (!Candidates.empty()) {
    WriteFinder W(*Context, Candidates);
    W.TraverseDecl(Context->getTranslationUnitDecl());
    Written = std::move(W.Written);
  }
  for (const Finding &F : Findings) {
    Emit(F, Candidates.count(F.VD) != 0 && Written.count(F.VD) == 0);
  }
  ReportUnchecked();
  Findings.clear();
  Context = nullptr;
}

}  // namespace atlas_lint
