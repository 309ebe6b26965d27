// atlas-stray-statics: a clang-tidy check, built as a plugin that Debian's
// clang-tidy 14 loads with --load, that flags every variable with static or
// thread storage duration whose object is mutable at the top level unless it
// is marked ATLAS_STATIC(CATEGORY) (lint/atlas_static.h), justified by a
// comment directly above it, and shaped as its category requires.
// STATICS.md explains the five categories; lint/README.md the gate.

#include <string>
#include <vector>

#include "clang-tidy/ClangTidyCheck.h"
#include "clang-tidy/ClangTidyModule.h"
#include "clang-tidy/ClangTidyModuleRegistry.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/Attr.h"
#include "clang/AST/Decl.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "clang/ASTMatchers/ASTMatchers.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Regex.h"

#include "lint/atlas_static.h"

namespace atlas_lint {
namespace {

using clang::ASTContext;
using clang::QualType;
using clang::SourceLocation;
using clang::SourceManager;
using clang::VarDecl;
using llvm::StringRef;

constexpr char kCheckName[] = "atlas-stray-statics";
constexpr char kAnnotationPrefix[] = "atlas_static:";
constexpr char kDefaultCudaHostFiles[] = "(^|/)runtime/cuda/cuda_host\\.c$";
constexpr char kCategories[] =
    "CUDA_HOST, LOG_ONCE, DIAG_ONCE, CONST_TABLE, LIFECYCLE";

enum class Category { kNone, kCudaHost, kLogOnce, kDiagOnce, kConstTable,
                      kLifecycle, kUnknown };

Category ParseCategory(StringRef Name) {
  return llvm::StringSwitch<Category>(Name)
      .Case("CUDA_HOST", Category::kCudaHost)
      .Case("LOG_ONCE", Category::kLogOnce)
      .Case("DIAG_ONCE", Category::kDiagOnce)
      .Case("CONST_TABLE", Category::kConstTable)
      .Case("LIFECYCLE", Category::kLifecycle)
      .Default(Category::kUnknown);
}

// True when the object itself can be written after initialization: not const
// at the top level (arrays: their elements), volatile, a C++ class with
// mutable fields, or a reference to a mutable object.
bool IsMutableObject(QualType T, const ASTContext &Ctx) {
  if (T->isReferenceType()) {
    QualType P = T->getPointeeType();
    if (P->isFunctionType()) return false;
    return IsMutableObject(P, Ctx);
  }
  QualType Base = Ctx.getBaseElementType(T);
  if (Base.isVolatileQualified()) return true;
  if (!Base.isConstQualified()) return true;
  if (const auto *RD = Base->getAsCXXRecordDecl()) {
    if (RD->hasDefinition() && RD->hasMutableFields()) return true;
  }
  return false;
}

// CONST_TABLE shape: const at every level, from the element up through every
// pointer (const char *const t[]); functions are immutable.
bool IsConstAllTheWay(QualType T, const ASTContext &Ctx) {
  QualType Cur = T;
  for (int Depth = 0; Depth < 64; ++Depth) {
    if (Cur->isReferenceType()) {
      Cur = Cur->getPointeeType();
      continue;
    }
    Cur = Ctx.getBaseElementType(Cur);
    if (Cur->isFunctionType()) return true;
    if (!Cur.isConstQualified() || Cur.isVolatileQualified()) return false;
    if (const auto *RD = Cur->getAsCXXRecordDecl()) {
      if (RD->hasDefinition() && RD->hasMutableFields()) return false;
    }
    if (Cur->isPointerType() || Cur->isMemberPointerType()) {
      Cur = Cur->getPointeeType();
      continue;
    }
    return true;
  }
  return true;
}

enum class LatchKind { kNotLatch, kFlag, kBoolLike };

bool IsBoolOrInteger(QualType T) {
  QualType C = T.getCanonicalType();
  return C->isBooleanType() || C->isIntegerType();
}

// once_flag, atomic_flag (C and C++), atomic bool/integer, plain bool.
LatchKind ClassifyLatch(QualType T) {
  // Typedef names first: glibc's once_flag is a typedef of an anonymous struct.
  QualType Cur = T;
  for (int Depth = 0; Depth < 32; ++Depth) {
    const clang::Type *Ty = Cur.getTypePtr();
    if (const auto *TT = llvm::dyn_cast<clang::TypedefType>(Ty)) {
      StringRef N = TT->getDecl()->getName();
      if (N == "once_flag" || N == "atomic_flag") return LatchKind::kFlag;
      Cur = TT->desugar();
      continue;
    }
    if (const auto *ET = llvm::dyn_cast<clang::ElaboratedType>(Ty)) {
      Cur = ET->getNamedType();
      continue;
    }
    break;
  }
  QualType C = T.getCanonicalType().getUnqualifiedType();
  if (const auto *AT = C->getAs<clang::AtomicType>()) {
    return IsBoolOrInteger(AT->getValueType()) ? LatchKind::kBoolLike
                                               : LatchKind::kNotLatch;
  }
  if (C->isBooleanType()) return LatchKind::kBoolLike;
  if (const auto *RD = C->getAsCXXRecordDecl()) {
    StringRef N = RD->getName();
    if (N == "once_flag" || N == "atomic_flag") return LatchKind::kFlag;
    if (const auto *Spec =
            llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(RD)) {
      if (N == "atomic" && Spec->getTemplateArgs().size() == 1 &&
          Spec->getTemplateArgs()[0].getKind() ==
              clang::TemplateArgument::Type &&
          IsBoolOrInteger(Spec->getTemplateArgs()[0].getAsType())) {
        return LatchKind::kBoolLike;
      }
    }
  } else if (const auto *RT = C->getAs<clang::RecordType>()) {
    StringRef N = RT->getDecl()->getName();
    if (N == "once_flag" || N == "atomic_flag") return LatchKind::kFlag;
  }
  return LatchKind::kNotLatch;
}

StringRef RTrim(StringRef S) { return S.rtrim(" \t\r\f\v"); }

// The text of the 1-based line Line of Buf, without its newline.
StringRef LineText(StringRef Buf, size_t LineStart) {
  size_t End = Buf.find('\n', LineStart);
  if (End == StringRef::npos) End = Buf.size();
  return Buf.slice(LineStart, End);
}

// Offset of the start of the line before the one starting at LineStart, or
// npos when LineStart is the first line.
size_t PrevLineStart(StringRef Buf, size_t LineStart) {
  if (LineStart == 0) return StringRef::npos;
  size_t NlBefore = LineStart - 1;  // the '\n' ending the previous line
  size_t Prev = Buf.rfind('\n', NlBefore);  // searches [0, NlBefore)
  return Prev == StringRef::npos ? 0 : Prev + 1;
}

StringRef StripCommentLeader(StringRef S) {
  S = S.ltrim();
  S = S.ltrim("/*!<");
  return RTrim(S.trim());
}

bool HasArgument(StringRef Text) {
  // A comment that only says NOLINT does not argue anything.
  std::string Rest;
  for (char Ch : Text) {
    if ((Ch >= 'a' && Ch <= 'z') || (Ch >= 'A' && Ch <= 'Z')) Rest.push_back(Ch);
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

class StrayStaticsCheck : public clang::tidy::ClangTidyCheck {
 public:
  StrayStaticsCheck(StringRef Name, clang::tidy::ClangTidyContext *Context)
      : ClangTidyCheck(Name, Context),
        CudaHostFiles(Options.get("CudaHostFiles", kDefaultCudaHostFiles)),
        CudaHostRegex(CudaHostFiles),
        // Options are read as strings: the bool overloads of get/store are not
        // exported by the clang-tidy executable a plugin resolves against.
        SkipSystemHeaders(llvm::StringRef(Options.get("SkipSystemHeaders",
                                                      "true"))
                              .equals_insensitive("true")) {}

  void storeOptions(clang::tidy::ClangTidyOptions::OptionMap &Opts) override {
    Options.store(Opts, "CudaHostFiles", CudaHostFiles);
    Options.store(Opts, "SkipSystemHeaders",
                  SkipSystemHeaders ? "true" : "false");
  }

  void registerMatchers(clang::ast_matchers::MatchFinder *Finder) override {
    using namespace clang::ast_matchers;
    if (SkipSystemHeaders) {
      Finder->addMatcher(translationUnitDecl().bind("tu"), this);
    }
    Finder->addMatcher(
        varDecl(unless(isImplicit()), unless(parmVarDecl())).bind("var"),
        this);
  }

  void check(const clang::ast_matchers::MatchFinder::MatchResult &Result)
      override;

 private:
  struct Subject {
    std::string Name;      // 'counter', or C++ qualified name at file scope
    std::string Function;  // enclosing function for static locals, or empty
    std::string Quoted() const {
      std::string S = "'" + Name + "'";
      if (!Function.empty()) S += " in function '" + Function + "'";
      return S;
    }
  };

  void Report(const VarDecl *VD, SourceLocation At, const SourceManager &SM,
              const clang::LangOptions &LO, const std::string &Message);

  void LimitTraversal(const clang::TranslationUnitDecl *TU, ASTContext *Ctx,
                      const SourceManager &SM);

  const std::string CudaHostFiles;
  const llvm::Regex CudaHostRegex;
  // Restrict the AST traversal of the run to declarations outside system
  // headers: statics there are not ours, and walking libc's declarations cost
  // more than the check itself. Off when combined with checks that need them.
  const bool SkipSystemHeaders;
};

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
    if (D->isImplicit() || L.isInvalid() ||
        SM.isInSystemHeader(SM.getExpansionLoc(L))) {
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
                               const SourceManager &SM,
                               const clang::LangOptions &LO,
                               const std::string &Message) {
  diag(At, Message);
  if (VD->getLocation().isMacroID()) {
    std::string Macro = OutermostMacro(VD->getLocation(), SM, LO);
    diag(SM.getSpellingLoc(VD->getLocation()),
         "'%0' is declared by macro '%1'; it is reported at each expansion, "
         "and a NOLINT inside the macro does not silence it",
         clang::DiagnosticIDs::Note)
        << VD->getName() << Macro;
  }
}

void StrayStaticsCheck::check(
    const clang::ast_matchers::MatchFinder::MatchResult &Result) {
  if (const auto *TU =
          Result.Nodes.getNodeAs<clang::TranslationUnitDecl>("tu")) {
    LimitTraversal(TU, Result.Context, *Result.SourceManager);
    return;
  }
  const auto *VD = Result.Nodes.getNodeAs<VarDecl>("var");
  if (VD == nullptr) return;
  // Templates are checked once, at their pattern, not per instantiation (no
  // isInstantiated() matcher: it builds the parent map, which costs more than
  // the whole check).
  if (clang::isTemplateInstantiation(VD->getTemplateSpecializationKind())) return;
  for (const clang::DeclContext *DC = VD->getDeclContext(); DC != nullptr;
       DC = DC->getParent()) {
    if (const auto *FD = llvm::dyn_cast<clang::FunctionDecl>(DC)) {
      if (FD->isTemplateInstantiation()) return;
    } else if (const auto *RD = llvm::dyn_cast<clang::CXXRecordDecl>(DC)) {
      if (clang::isTemplateInstantiation(RD->getTemplateSpecializationKind())) {
        return;
      }
    }
  }
  const SourceManager &SM = *Result.SourceManager;
  const ASTContext &Ctx = *Result.Context;
  const clang::LangOptions &LO = Ctx.getLangOpts();

  SourceLocation At = SM.getExpansionLoc(VD->getLocation());
  if (At.isInvalid() || SM.isInSystemHeader(At)) return;

  // Collect the ATLAS_STATIC marks.
  std::string CategoryName;
  Category Cat = Category::kNone;
  SourceLocation FirstLoc = SM.getExpansionLoc(VD->getBeginLoc());
  bool Conflict = false;
  for (const auto *A : VD->specific_attrs<clang::AnnotateAttr>()) {
    StringRef Ann = A->getAnnotation();
    if (!Ann.startswith(kAnnotationPrefix)) continue;
    StringRef Name = Ann.drop_front(sizeof(kAnnotationPrefix) - 1);
    SourceLocation AL = SM.getExpansionLoc(A->getLocation());
    if (AL.isValid() && SM.isBeforeInTranslationUnit(AL, FirstLoc)) FirstLoc = AL;
    if (Cat != Category::kNone && Name != CategoryName) Conflict = true;
    CategoryName = Name.str();
    Cat = ParseCategory(Name);
  }

  Subject Subj;
  const bool Local = VD->isLocalVarDecl();
  Subj.Name = Local || !LO.CPlusPlus ? VD->getNameAsString()
                                     : VD->getQualifiedNameAsString();
  if (Local) Subj.Function = EnclosingFunction(VD);

  if (!VD->hasGlobalStorage()) {
    if (Cat != Category::kNone) {
      Report(VD, At, SM, LO,
             "'" + Subj.Name + "' is marked " + CategoryName +
                 " but is not a static (it has automatic storage); remove the "
                 "ATLAS_STATIC mark");
    }
    return;
  }
  // A mere declaration (extern int x;) is checked at its definition.
  if (VD->isThisDeclarationADefinition() == VarDecl::DeclarationOnly) return;
  const VarDecl *Def = VD->getDefinition();
  if (Def == nullptr) Def = VD->getActingDefinition();
  if (Def != nullptr && Def != VD) return;

  const bool Mutable = IsMutableObject(VD->getType(), Ctx);
  if (Cat == Category::kNone) {
    if (!Mutable) return;
    Report(VD, At, SM, LO,
           "mutable static " + Subj.Quoted() +
               " is in none of the five categories (STATICS.md): make it "
               "const, pass it through a carrier (atlas_forward_ctx, the model "
               "handle, the backend), or mark it ATLAS_STATIC(CATEGORY) with a "
               "comment arguing its case");
    return;
  }
  if (Conflict) {
    Report(VD, At, SM, LO,
           "static " + Subj.Quoted() +
               " is marked with more than one category: keep exactly one "
               "ATLAS_STATIC mark");
  }
  switch (Cat) {
    case Category::kUnknown:
      Report(VD, At, SM, LO,
             "static " + Subj.Quoted() + " is marked with unknown category '" +
                 CategoryName + "': use one of " + kCategories +
                 " (STATICS.md)");
      break;
    case Category::kCudaHost: {
      StringRef File = SM.getFilename(At);
      std::string Path = File.str();
      for (char &Ch : Path) {
        if (Ch == '\\') Ch = '/';
      }
      if (!CudaHostRegex.match(Path)) {
        Report(VD, At, SM, LO,
               "static " + Subj.Quoted() +
                   " is marked CUDA_HOST outside the CUDA host (files matching "
                   "CudaHostFiles '" + CudaHostFiles +
                   "'): move it into the CUDA host or pass it through a "
                   "carrier");
      }
      break;
    }
    case Category::kLogOnce:
    case Category::kDiagOnce: {
      LatchKind Kind = ClassifyLatch(VD->getType());
      if (Kind == LatchKind::kNotLatch) {
        Report(VD, At, SM, LO,
               "static " + Subj.Quoted() + " is marked " + CategoryName +
                   " but is not a latch (once_flag, atomic_flag, atomic or "
                   "plain bool): keep its state in a carrier, or make it a "
                   "latch");
      } else if (Kind == LatchKind::kBoolLike) {
        StringRef N = VD->getName();
        bool Ok = Cat == Category::kLogOnce
                      ? (N.endswith("_LOGGED") || N.endswith("_WARNED"))
                      : (N.endswith("_DUMP_DONE") || N.endswith("_DIAG_DONE"));
        if (!Ok) {
          Report(VD, At, SM, LO,
                 "static " + Subj.Quoted() + " is marked " + CategoryName +
                     " but its name does not end in " +
                     (Cat == Category::kLogOnce
                          ? "_LOGGED or _WARNED"
                          : "_DUMP_DONE or _DIAG_DONE") +
                     ": rename it so every use reads as a latch");
        }
      }
      break;
    }
    case Category::kConstTable:
      if (Mutable || !IsConstAllTheWay(VD->getType(), Ctx)) {
        Report(VD, At, SM, LO,
               "static " + Subj.Quoted() +
                   " is marked CONST_TABLE but is mutable: make it const all "
                   "the way to the top (const char *const t[])");
      }
      break;
    case Category::kLifecycle:
    case Category::kNone:
      break;
  }

  // The comment arguing its case: starts on its own line and ends on the
  // line directly above the declaration's first line.
  std::pair<clang::FileID, unsigned> Decomposed = SM.getDecomposedLoc(FirstLoc);
  bool Invalid = false;
  StringRef Buf = SM.getBufferData(Decomposed.first, &Invalid);
  if (Invalid) return;
  size_t LineStart = Buf.rfind('\n', Decomposed.second);  // [0, offset)
  LineStart = LineStart == StringRef::npos ? 0 : LineStart + 1;
  std::string FirstLine;
  if (!FindArguingComment(Buf, LineStart, &FirstLine)) {
    Report(VD, At, SM, LO,
           "marked static " + Subj.Quoted() +
               " has no comment arguing its case: write one that starts on its "
               "own line and ends on the line directly above the declaration");
  }
}

class AtlasModule : public clang::tidy::ClangTidyModule {
 public:
  void addCheckFactories(
      clang::tidy::ClangTidyCheckFactories &Factories) override {
    Factories.registerCheck<StrayStaticsCheck>(kCheckName);
  }
};

}  // namespace

// clang-tidy finds checks only through its module registry, a process-wide
// list that a plugin joins when the dynamic loader runs its initializers.
ATLAS_STATIC(LIFECYCLE)
static clang::tidy::ClangTidyModuleRegistry::Add<AtlasModule> g_atlas_module(
    "atlas-module", "Atlas: no mutable statics outside the five categories.");

}  // namespace atlas_lint
