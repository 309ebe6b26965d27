// atlas-stray-statics: a clang-tidy check, built as a plugin that Debian's
// clang-tidy 14 loads with --load, that flags every variable with static or
// thread storage duration whose object is mutable at the top level unless it
// is marked ATLAS_STATIC(CATEGORY) (lint/atlas_static.h), justified by a
// comment directly above it, and shaped as its category requires.
// STATICS.md explains the five categories; lint/README.md the gate.
//
// No unaccounted escape: findings are reported at error level, which
// clang-tidy never lets NOLINT comments suppress (lint/tidy_action.py turns
// them back into warnings); a mark counts only when it is the genuine
// ATLAS_STATIC macro spelled at the declaration.

#include <cctype>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "clang-tidy/ClangTidyCheck.h"
#include "clang-tidy/ClangTidyModule.h"
#include "clang-tidy/ClangTidyModuleRegistry.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/Attr.h"
#include "clang/AST/Decl.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/Expr.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "clang/ASTMatchers/ASTMatchers.h"
#include "clang/Analysis/Analyses/ExprMutationAnalyzer.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "clang/Lex/MacroInfo.h"
#include "clang/Lex/PPCallbacks.h"
#include "clang/Lex/Preprocessor.h"
#include "lint/statics/check.h"
#include "lint/statics/pp_facts.h"
#include "lint/statics/source_text.h"
#include "lint/statics/type_shapes.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

namespace atlas_lint {

Category BuiltinCategory(StringRef Name) {
  return llvm::StringSwitch<Category>(Name)
      .Case("CUDA_HOST", Category::kCudaHost)
      .Case("LOG_ONCE", Category::kLogOnce)
      .Case("DIAG_ONCE", Category::kDiagOnce)
      .Case("CONST_TABLE", Category::kConstTable)
      .Case("LIFECYCLE", Category::kLifecycle)
      .Default(Category::kCustom);
}

bool StrayStaticsCheck::CategoryAllowed(StringRef Name) const {
  for (const std::string &C : Categories) {
    if (C == Name) return true;
  }
  return false;
}

// The MatchFinder matches the translation unit before it walks its children,
// and reads the traversal scope only then: narrowing it here spares the walk
// over every declaration of every system header.
void StrayStaticsCheck::LimitTraversal(const clang::TranslationUnitDecl *TU,
                                       ASTContext *Ctx,
                                       const SourceManager &SM) {
  std::vector<clang::Decl *> Scope;
  bool Skipped = false;
  for (clang::Decl *D : TU->decls()) {
    SourceLocation L = D->getLocation();
    if (D->isImplicit() || L.isInvalid() || FoundInSystemDir(L, SM)) {
      Skipped = true;
      continue;
    }
    Scope.push_back(D);
  }
  if (Skipped) Ctx->setTraversalScope(Scope);
}

std::string EnclosingFunction(const VarDecl *VD) {
  const clang::DeclContext *DC = VD->getDeclContext();
  while (DC != nullptr && !DC->isFileContext()) {
    if (const auto *FD = llvm::dyn_cast<clang::FunctionDecl>(DC)) {
      return FD->getQualifiedNameAsString();
    }
    if (const auto *MD = llvm::dyn_cast<clang::ObjCMethodDecl>(DC)) {
      return MD->getNameAsString();
    }
    DC = DC->getParent();
  }
  return "";
}

// The outermost macro whose expansion produced Loc, or empty.
std::string OutermostMacro(SourceLocation Loc, const SourceManager &SM,
                           const clang::LangOptions &LO) {
  std::string Name;
  while (Loc.isMacroID()) {
    StringRef N = clang::Lexer::getImmediateMacroName(Loc, SM, LO);
    if (!N.empty()) Name = N.str();
    Loc = SM.getImmediateMacroCallerLoc(Loc);
  }
  return Name;
}

void StrayStaticsCheck::Report(const VarDecl *VD, SourceLocation At,
                               std::string Message, bool Stray,
                               std::string Fits) {
  Finding F;
  F.VD = VD;
  F.At = At;
  F.Message = std::move(Message);
  F.Stray = Stray;
  F.FitsCategory = std::move(Fits);
  Findings.push_back(std::move(F));
}

// C++: `T *const p = new T` (or any initializer run at startup): the pointer
// cannot change, but what it points at is a mutable object that exists once
// per process, made by the initializer. A constant initializer (&x, nullptr)
// points at something checked in its own right.
bool PointsAtStartupHeap(const VarDecl *VD, const ASTContext &Ctx) {
  if (!Ctx.getLangOpts().CPlusPlus || !VD->hasInit() ||
      VD->getType()->isDependentType()) {
    return false;
  }
  QualType Base = Ctx.getBaseElementType(VD->getType());
  if (!Base->isPointerType()) return false;
  QualType Pointee = Base->getPointeeType();
  if (Pointee->isFunctionType() || Pointee->isVoidType() ||
      !IsMutableObject(Pointee, Ctx)) {
    return false;
  }
  return !VD->hasConstantInitialization();
}

// C++: a const object whose type holds a pointer, a reference, a smart pointer,
// std::function or another type-erased handle (at any depth) and whose
// initializer runs at startup: the handle cannot change, but it reaches state
// made or chosen when the process started. Deep-const values stay quiet.
bool HoldsStartupHandle(const VarDecl *VD, const ASTContext &Ctx,
                        std::string *Handle) {
  if (!Ctx.getLangOpts().CPlusPlus || !VD->hasInit() ||
      VD->getType()->isDependentType() || VD->hasConstantInitialization()) {
    return false;
  }
  return HoldsHandle(VD->getType(), Ctx, Handle);
}

// The static local of a function template's pattern that `VD`, a static
// local of one of its instantiations, was instantiated from (the same
// location), or null.
const VarDecl *LocalPattern(const VarDecl *VD, const clang::FunctionDecl *FD) {
  const clang::FunctionDecl *P = FD->getTemplateInstantiationPattern();
  if (P == nullptr) return nullptr;
  for (const clang::Decl *D : P->decls()) {
    const auto *V = llvm::dyn_cast<VarDecl>(D);
    if (V != nullptr && V->getLocation() == VD->getLocation()) return V;
  }
  return nullptr;
}

// A static of a template instantiation: the pattern said `const T` (or
// similar) and was immutable as written, but this type makes it mutable (a
// class with a mutable or volatile member, a volatile T). What the pattern
// shows as mutable, or marks, was reported there.
void StrayStaticsCheck::CheckInstantiation(const VarDecl *VD,
                                           const VarDecl *Pattern,
                                           const SourceManager &SM,
                                           const ASTContext &Ctx) {
  if (Pattern == nullptr || !VD->hasGlobalStorage() ||
      VD->hasAttr<clang::CUDASharedAttr>() ||
      VD->isThisDeclarationADefinition() == VarDecl::DeclarationOnly) {
    return;
  }
  if (!IsMutableObject(VD->getType(), Ctx) ||
      IsMutableObject(Pattern->getType(), Ctx)) {
    return;
  }
  for (const auto *A : Pattern->specific_attrs<clang::AnnotateAttr>()) {
    if (A->getAnnotation().startswith(kAnnotationPrefix)) return;
  }
  SourceLocation At = SM.getExpansionLoc(VD->getLocation());
  if (At.isInvalid() || FoundInSystemDir(At, SM)) return;
  std::string Name = VD->isLocalVarDecl() ? VD->getNameAsString()
                                          : VD->getQualifiedNameAsString();
  if (VD->isLocalVarDecl()) Name += "' in function '" + EnclosingFunction(VD);
  Report(VD, At,
         "mutable static '" + Name + "' (instantiated with type '" +
             VD->getType().getAsString() +
             "', which a const does not make immutable) is in none of "
             "the allowed categories: " +
             StrayAdvice);
}

// The one category whose shape an unmarked straggler already fits, for the
// mark fix-it; empty when none or more than one does.
std::string StrayStaticsCheck::FittingCategory(const VarDecl *VD,
                                               const SourceManager &SM,
                                               const ASTContext &Ctx) const {
  std::vector<std::string> Fits;
  StringRef N = VD->getName();
  LatchKind Latch = ClassifyLatch(VD->getType(), SM, Ctx);
  if (Latch != LatchKind::kNotLatch) {
    bool LogName = N.endswith("_LOGGED") || N.endswith("_WARNED");
    bool DiagName = N.endswith("_DUMP_DONE") || N.endswith("_DIAG_DONE");
    if (LogName && CategoryAllowed("LOG_ONCE")) Fits.push_back("LOG_ONCE");
    if (DiagName && CategoryAllowed("DIAG_ONCE")) Fits.push_back("DIAG_ONCE");
  }
  std::string Path =
      WorkspacePath(SM.getFilename(SM.getExpansionLoc(VD->getLocation())));
  if (CategoryAllowed("CUDA_HOST") && CudaHostRegex.match(Path)) {
    Fits.push_back("CUDA_HOST");
  }
  if (CategoryAllowed("LIFECYCLE") && LifecycleRegex.match(Path) &&
      !HoldsPointerOrFloat(VD->getType(), Ctx)) {
    Fits.push_back("LIFECYCLE");
  }
  return Fits.size() == 1 ? Fits[0] : "";
}

// A compound literal at file scope is an unnamed object with static storage;
// unless its type is const it is a mutable static, even behind a const pointer.
void StrayStaticsCheck::CheckCompoundLiterals(const VarDecl *VD,
                                              const SourceManager &SM,
                                              const ASTContext &Ctx) {
  const clang::Expr *Init = VD->getInit();
  if (Init == nullptr) return;
  std::vector<const clang::Stmt *> Work = {Init};
  int Index = 0;
  while (!Work.empty()) {
    const clang::Stmt *S = Work.back();
    Work.pop_back();
    if (S == nullptr) continue;
    if (const auto *CL = llvm::dyn_cast<clang::CompoundLiteralExpr>(S)) {
      if (CL->isFileScope() && IsMutableObject(CL->getType(), Ctx)) {
        ++Index;
        std::string Name = VD->getNameAsString() + " (compound literal" +
                           (Index > 1 ? " " + std::to_string(Index) : "") + ")";
        Report(VD, SM.getExpansionLoc(CL->getBeginLoc()),
               "mutable static '" + Name +
                   "' is in none of the allowed categories: a compound literal "
                   "at file scope is an unnamed static; make its type const "
                   "((const T[]){...}) or give the state an owner");
      }
    }
    for (const clang::Stmt *Child : S->children()) Work.push_back(Child);
  }
}

// The marks of a declaration: only the genuine ATLAS_STATIC macro, spelled at
// the declaration, counts; anything else that looks like one is a bad mark.
StrayStaticsCheck::Mark StrayStaticsCheck::ReadMark(const VarDecl *VD,
                                                    const SourceManager &SM,
                                                    const ASTContext &Ctx) {
  Mark M;
  M.FirstLoc = SM.getExpansionLoc(VD->getBeginLoc());
  for (const auto *A : VD->specific_attrs<clang::AnnotateAttr>()) {
    StringRef Ann = A->getAnnotation();
    if (!Ann.startswith(kAnnotationPrefix)) continue;
    StringRef Name = Ann.drop_front(sizeof(kAnnotationPrefix) - 1);
    SourceLocation AL = A->getLocation();
    // Find the ATLAS_STATIC expansion that produced the attribute.
    SourceLocation MarkTok;
    for (SourceLocation L = AL; L.isMacroID();) {
      // Through macro arguments to the macro body the token came from.
      while (L.isMacroID() && SM.isMacroArgExpansion(L)) {
        L = SM.getImmediateSpellingLoc(L);
      }
      if (!L.isMacroID()) break;
      if (clang::Lexer::getImmediateMacroName(L, SM, Ctx.getLangOpts()) ==
          kMarkMacro) {
        MarkTok = SM.getImmediateExpansionRange(L).getBegin();
        break;
      }
      L = SM.getImmediateExpansionRange(L).getBegin();
    }
    SourceLocation Spelled =
        SM.getExpansionLoc(MarkTok.isValid() ? MarkTok : AL);
    std::pair<clang::FileID, unsigned> SD = SM.getDecomposedLoc(Spelled);
    const bool FromPragma = Facts.PragmaAttributeLines.count(
                                {SD.first.getHashValue(),
                                 SM.getLineNumber(SD.first, SD.second)}) != 0;
    if (FromPragma) {
      M.BadMark =
          "its atlas_static annotation is applied by '#pragma clang "
          "attribute'";
      continue;
    }
    if (A->isInherited()) {
      M.BadMark = "its ATLAS_STATIC mark is on another declaration of it";
      continue;
    }
    if (!MarkTok.isValid()) {
      M.BadMark =
          "its atlas_static annotation is a raw attribute, not the "
          "ATLAS_STATIC macro";
      continue;
    }
    auto It =
        Facts.MarkExpansions.find(SM.getSpellingLoc(MarkTok).getRawEncoding());
    if (It == Facts.MarkExpansions.end() || !It->second) {
      M.BadMark =
          "its ATLAS_STATIC is not the macro from lint/atlas_static.h "
          "(redefined)";
      continue;
    }
    // Spelled at the declaration: the ATLAS_STATIC token is written in the
    // file, or passed as a macro argument written there; never taken from
    // the body of another macro.
    bool InBody = false;
    for (SourceLocation L = MarkTok; L.isMacroID();) {
      if (!SM.isMacroArgExpansion(L)) {
        InBody = true;
        break;
      }
      L = SM.getImmediateSpellingLoc(L);
    }
    if (InBody) {
      M.BadMark = "its ATLAS_STATIC mark comes from the body of macro '" +
                  OutermostMacro(MarkTok, SM, Ctx.getLangOpts()) +
                  "', not from the declaration";
      continue;
    }
    SourceLocation ML = SM.getExpansionLoc(MarkTok);
    if (ML.isValid() && SM.isBeforeInTranslationUnit(ML, M.FirstLoc))
      M.FirstLoc = ML;
    if (M.Cat != Category::kNone && Name != M.CategoryName) M.Conflict = true;
    M.CategoryName = Name.str();
    M.Cat = BuiltinCategory(Name);
  }

  return M;
}

void StrayStaticsCheck::check(
    const clang::ast_matchers::MatchFinder::MatchResult &Result) {
  Context = Result.Context;
  if (const auto *TU =
          Result.Nodes.getNodeAs<clang::TranslationUnitDecl>("tu")) {
    if (SkipSystemHeaders) {
      LimitTraversal(TU, Result.Context, *Result.SourceManager);
    }
    return;
  }
  const auto *VD = Result.Nodes.getNodeAs<VarDecl>("var");
  if (VD == nullptr) return;
  const SourceManager &SM = *Result.SourceManager;
  const ASTContext &Ctx = *Result.Context;
  // Templates are checked at their pattern, as written; an instantiation
  // only for what the pattern cannot show (no isInstantiated() matcher: it
  // builds the parent map, which costs more than the whole check).
  bool Instantiated = false;
  const VarDecl *Pattern = nullptr;
  if (clang::isTemplateInstantiation(VD->getTemplateSpecializationKind())) {
    Instantiated = true;
    Pattern = VD->getTemplateInstantiationPattern();
  }
  // An explicit specialization is written code, checked as such, also when
  // the class around it is an instantiation.
  bool Written =
      VD->getTemplateSpecializationKind() == clang::TSK_ExplicitSpecialization;
  for (const clang::DeclContext *DC = VD->getDeclContext();
       DC != nullptr && !Instantiated && !Written; DC = DC->getParent()) {
    if (const auto *FD = llvm::dyn_cast<clang::FunctionDecl>(DC)) {
      if (FD->getTemplateSpecializationKind() ==
          clang::TSK_ExplicitSpecialization) {
        Written = true;
      } else if (FD->isTemplateInstantiation()) {
        Instantiated = true;
        Pattern = LocalPattern(VD, FD);
      }
    } else if (const auto *RD = llvm::dyn_cast<clang::CXXRecordDecl>(DC)) {
      if (clang::isTemplateInstantiation(RD->getTemplateSpecializationKind())) {
        Instantiated = true;
      }
    }
  }
  if (Instantiated) {
    CheckInstantiation(VD, Pattern, SM, Ctx);
    return;
  }

  SourceLocation At = SM.getExpansionLoc(VD->getLocation());
  if (At.isInvalid() || FoundInSystemDir(At, SM)) return;

  Subject Subj;
  const bool Local = VD->isLocalVarDecl();
  Subj.Name = Local || !Ctx.getLangOpts().CPlusPlus
                  ? VD->getNameAsString()
                  : VD->getQualifiedNameAsString();
  if (Local) Subj.Function = EnclosingFunction(VD);

  const Mark M = ReadMark(VD, SM, Ctx);
  const std::string &CategoryName = M.CategoryName;
  const Category Cat = M.Cat;
  const std::string &BadMark = M.BadMark;

  if (VD->hasAttr<clang::CUDASharedAttr>() && VD->isFileVarDecl() &&
      VD->isThisDeclarationADefinition() != VarDecl::DeclarationOnly) {
    // At namespace scope it is also a host object (nvcc only warns when
    // host code writes it): declared in the kernel, it is only the block's.
    Report(VD, At,
           "__shared__ " + Subj.Quoted() +
               " is defined at namespace scope, where it is also a "
               "mutable host static: declare it inside the kernel "
               "(extern __shared__ for dynamic shared memory)");
    return;
  }
  if (VD->hasAttr<clang::CUDASharedAttr>()) {
    // __shared__: per thread block, lives as long as the block; not a static.
    if (Cat != Category::kNone) {
      Report(VD, At,
             "'" + Subj.Name + "' is marked " + CategoryName +
                 " but is __shared__ (per thread block, not a static); "
                 "remove the ATLAS_STATIC mark");
    }
    return;
  }

  if (!VD->hasGlobalStorage()) {
    if (Cat != Category::kNone) {
      Report(VD, At,
             "'" + Subj.Name + "' is marked " + CategoryName +
                 " but is not a static (it has automatic storage); "
                 "remove the ATLAS_STATIC mark");
    }
    return;
  }
  // A mere declaration (extern int x;) is checked at its definition.
  if (VD->isThisDeclarationADefinition() == VarDecl::DeclarationOnly) return;
  const VarDecl *Def = VD->getDefinition();
  if (Def == nullptr) Def = VD->getActingDefinition();
  if (Def != nullptr && Def != VD) return;

  if (VD->isFileVarDecl()) CheckCompoundLiterals(VD, SM, Ctx);

  const bool Device = VD->hasAttr<clang::CUDADeviceAttr>() ||
                      VD->hasAttr<clang::CUDAConstantAttr>();
  const std::string What =
      std::string(Device ? "mutable device global " : "mutable static ") +
      Subj.Quoted();
  const bool Mutable = IsMutableObject(VD->getType(), Ctx);
  if (!BadMark.empty()) {
    Report(VD, At,
           What + " has no valid mark: " + BadMark +
               "; only ATLAS_STATIC(CATEGORY) from lint/atlas_static.h, "
               "spelled at the declaration, marks a static");
    return;
  }
  if (Cat == Category::kNone) {
    if (!Mutable && PointsAtStartupHeap(VD, Ctx)) {
      Report(VD, At,
             "static " + Subj.Quoted() +
                 " is a const pointer to mutable memory that its "
                 "initializer makes at startup (not a constant): that "
                 "memory is global state; " +
                 StrayAdvice);
      return;
    }
    std::string Handle;
    if (!Mutable && HoldsStartupHandle(VD, Ctx, &Handle)) {
      Report(VD, At,
             "static " + Subj.Quoted() + " is const but holds " + Handle +
                 " that its initializer sets at startup (not a constant): "
                 "what it reaches is global state; " +
                 StrayAdvice);
      return;
    }
    if (!Mutable) return;
    Report(VD, At,
           What + " is in none of the allowed categories: " + StrayAdvice,
           /*Stray=*/true, FittingCategory(VD, SM, Ctx));
    return;
  }
  if (CheckIncludedSource(VD, Subj, M, At, SM)) return;
  CheckShape(VD, Subj, M, At, Mutable, SM, Ctx);
  CheckComment(Subj, M, VD, At, SM);
}

// A marked static spelled in a source file (.c, .cc, .cu) that another file
// includes: the includer gets its own copy, so "one per process" no longer
// holds. Reported at the #include, in the including file.
bool StrayStaticsCheck::CheckIncludedSource(const VarDecl *VD,
                                            const Subject &Subj, const Mark &M,
                                            SourceLocation At,
                                            const SourceManager &SM) {
  clang::FileID FID = SM.getFileID(At);
  if (FID == SM.getMainFileID()) return false;
  StringRef Ext = llvm::sys::path::extension(SM.getFilename(At));
  if (Ext != ".c" && Ext != ".cc" && Ext != ".cpp" && Ext != ".cxx" &&
      Ext != ".cu") {
    return false;
  }
  SourceLocation Inc = SM.getIncludeLoc(FID);
  while (Inc.isValid() && SM.getFileID(Inc) != SM.getMainFileID()) {
    Inc = SM.getIncludeLoc(SM.getFileID(Inc));
  }
  if (Inc.isInvalid()) return false;
  Report(VD, Inc,
         "static " + Subj.Quoted() + " marked " + M.CategoryName + " in '" +
             WorkspacePath(SM.getFilename(At)) +
             "' is included into this file, which gets its own copy of it: "
             "include a header that declares it, and link the file that "
             "defines it");
  return true;
}

// The shape the static's category requires.
void StrayStaticsCheck::CheckShape(const VarDecl *VD, const Subject &Subj,
                                   const Mark &M, SourceLocation At,
                                   bool Mutable, const SourceManager &SM,
                                   const ASTContext &Ctx) {
  const std::string &CategoryName = M.CategoryName;
  const Category Cat = M.Cat;
  if (M.Conflict) {
    Report(VD, At,
           "static " + Subj.Quoted() +
               " is marked with more than one category: keep exactly "
               "one ATLAS_STATIC mark");
  }
  if (!CategoryAllowed(CategoryName)) {
    std::string List;
    for (const std::string &C : Categories)
      List += (List.empty() ? "" : ", ") + C;
    Report(VD, At,
           "static " + Subj.Quoted() + " is marked with unknown category '" +
               CategoryName + "': use one of " + List);
    return;
  }
  const std::string Path = WorkspacePath(SM.getFilename(At));
  switch (Cat) {
    case Category::kCudaHost:
      if (!CudaHostRegex.match(Path)) {
        Report(VD, At,
               "static " + Subj.Quoted() +
                   " is marked CUDA_HOST outside the CUDA host (files "
                   "matching CudaHostFiles '" +
                   CudaHostFiles +
                   "'): move it into the CUDA host or pass it through "
                   "the object that owns it");
      }
      break;
    case Category::kLogOnce:
    case Category::kDiagOnce: {
      LatchKind Kind = ClassifyLatch(VD->getType(), SM, Ctx);
      if (Kind == LatchKind::kNotLatch) {
        Report(VD, At,
               "static " + Subj.Quoted() + " is marked " + CategoryName +
                   " but is not a latch (bool, atomic_bool, atomic_flag "
                   "or once_flag from the standard headers, or a type "
                   "wrapping exactly one of them): keep its state in "
                   "the object that owns it, or make it a latch");
      } else if (Kind == LatchKind::kBoolLike) {
        StringRef N = VD->getName();
        bool Ok = Cat == Category::kLogOnce
                      ? (N.endswith("_LOGGED") || N.endswith("_WARNED"))
                      : (N.endswith("_DUMP_DONE") || N.endswith("_DIAG_DONE"));
        if (!Ok) {
          Report(VD, At,
                 "static " + Subj.Quoted() + " is marked " + CategoryName +
                     " but its name does not end in " +
                     (Cat == Category::kLogOnce ? "_LOGGED or _WARNED"
                                                : "_DUMP_DONE or _DIAG_DONE") +
                     ": rename it so every use reads as a latch");
        }
      }
      break;
    }
    case Category::kConstTable:
      if (Mutable || !IsConstAllTheWay(VD->getType(), Ctx)) {
        Report(VD, At,
               "static " + Subj.Quoted() +
                   " is marked CONST_TABLE but is mutable: make it const "
                   "all the way to the top (const char *const t[])");
      }
      break;
    case Category::kLifecycle:
      if (!LifecycleRegex.match(Path)) {
        Report(VD, At,
               "static " + Subj.Quoted() +
                   " is marked LIFECYCLE outside the lifecycle files "
                   "(files matching LifecycleFiles '" +
                   LifecycleFiles +
                   "'): keep its state in the object that owns it");
      } else if (HoldsPointerOrFloat(VD->getType(), Ctx)) {
        Report(VD, At,
               "static " + Subj.Quoted() +
                   " is marked LIFECYCLE but holds a pointer, reference "
                   "or floating-point value, which could be model-derived: "
                   "LIFECYCLE state is flags, counters, file descriptors "
                   "and character buffers");
      }
      break;
    case Category::kCustom:
    case Category::kNone:
      break;
  }
}

// The comment arguing its case: starts on its own line and ends on the line
// directly above the declaration's first line.
void StrayStaticsCheck::CheckComment(const Subject &Subj, const Mark &M,
                                     const VarDecl *VD, SourceLocation At,
                                     const SourceManager &SM) {
  const SourceLocation FirstLoc = M.FirstLoc;
  std::pair<clang::FileID, unsigned> Decomposed = SM.getDecomposedLoc(FirstLoc);
  bool Invalid = false;
  StringRef Buf = SM.getBufferData(Decomposed.first, &Invalid);
  if (Invalid) return;
  size_t LineStart = Buf.rfind('\n', Decomposed.second);  // [0, offset)
  LineStart = LineStart == StringRef::npos ? 0 : LineStart + 1;
  std::string FirstLine;
  if (!FindArguingComment(Buf, LineStart, &FirstLine)) {
    Report(VD, At,
           "marked static " + Subj.Quoted() +
               " has no comment arguing its case: write one that starts "
               "on its own line and ends on the line directly above the "
               "declaration");
  }
}

namespace {

class AtlasModule : public clang::tidy::ClangTidyModule {
 public:
  void addCheckFactories(
      clang::tidy::ClangTidyCheckFactories &Factories) override {
    Factories.registerCheck<StrayStaticsCheck>(kCheckName);
  }
};

// clang-tidy finds checks only through its module registry, a process-wide
// list that a plugin joins while the dynamic loader runs its initializers.
// The registry node is allocated here and linked into that list for the life
// of the process, so the plugin itself keeps no static.
__attribute__((constructor)) void RegisterAtlasModule() {
  new clang::tidy::ClangTidyModuleRegistry::Add<AtlasModule>(
      "atlas-module",
      "Atlas: no mutable statics outside the allowed categories.");
}

}  // namespace
}  // namespace atlas_lint
