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
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

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
constexpr char kMarkMacro[] = "ATLAS_STATIC";
// Searched in the file's path with . and .. resolved (a path spelled through
// runtime/lifecycle/../ is not in it).
constexpr char kDefaultCudaHostFiles[] = "(^|/)runtime/cuda/cuda_host\\.c$";
constexpr char kDefaultLifecycleFiles[] = "(^|/)runtime/lifecycle(/|\\.c$)";
constexpr char kDefaultCategories[] =
    "CUDA_HOST,LOG_ONCE,DIAG_ONCE,CONST_TABLE,LIFECYCLE";
constexpr char kDefaultStrayAdvice[] =
    "make it const, keep the state in the object that owns it and pass that "
    "object, or mark it ATLAS_STATIC(CATEGORY) with a comment arguing its case";
// The comment the mark fix-it inserts: it argues nothing until its author
// replaces it, so applying the fix alone never passes the gate.
constexpr char kCommentTemplate[] =
    "TODO(atlas-stray-statics): argue why this static may stay";

enum class Category {
  kNone,
  kCudaHost,
  kLogOnce,
  kDiagOnce,
  kConstTable,
  kLifecycle,
  kCustom
};

Category BuiltinCategory(StringRef Name) {
  return llvm::StringSwitch<Category>(Name)
      .Case("CUDA_HOST", Category::kCudaHost)
      .Case("LOG_ONCE", Category::kLogOnce)
      .Case("DIAG_ONCE", Category::kDiagOnce)
      .Case("CONST_TABLE", Category::kConstTable)
      .Case("LIFECYCLE", Category::kLifecycle)
      .Default(Category::kCustom);
}

bool IsImmutableRecord(const clang::RecordDecl *RD, const ASTContext &Ctx,
                       int Depth);

// A member (or a member's member, an element, a base) declared volatile.
bool HasVolatileMember(const clang::RecordDecl *RD, const ASTContext &Ctx,
                       int Depth) {
  const clang::RecordDecl *Def = RD->getDefinition();
  if (Def == nullptr || Depth > 16) return false;
  if (const auto *CRD = llvm::dyn_cast<clang::CXXRecordDecl>(Def)) {
    for (const auto &B : CRD->bases()) {
      const clang::RecordDecl *BD = B.getType()->getAsRecordDecl();
      if (BD != nullptr && HasVolatileMember(BD, Ctx, Depth + 1)) return true;
    }
  }
  for (const clang::FieldDecl *F : Def->fields()) {
    QualType FT = Ctx.getBaseElementType(F->getType());
    if (FT.isVolatileQualified()) return true;
    const clang::RecordDecl *FR = FT->getAsRecordDecl();
    if (FR != nullptr && HasVolatileMember(FR, Ctx, Depth + 1)) return true;
  }
  return false;
}

// True when the object itself can be written after initialization: not const
// at the top level (arrays: their elements), volatile, a C++ class with
// mutable fields, or a reference to a mutable object. A record none of whose
// members can be written (all const, or none at all: a lambda with no
// captures, a tag type) is not mutable even when the object is not const.
bool IsMutableObject(QualType T, const ASTContext &Ctx, int Depth = 0) {
  if (Depth > 16) return true;
  if (T->isReferenceType()) {
    QualType P = T->getPointeeType();
    if (P->isFunctionType()) return false;
    return IsMutableObject(P, Ctx, Depth + 1);
  }
  QualType Base = Ctx.getBaseElementType(T);
  if (Base.isVolatileQualified()) return true;
  if (const auto *RD = Base->getAsRecordDecl()) {
    if (const auto *CRD = llvm::dyn_cast<clang::CXXRecordDecl>(RD)) {
      if (CRD->hasDefinition() && CRD->hasMutableFields()) return true;
    }
    // const volatile is flagged as a scalar; so in a const record.
    if (Base.isConstQualified()) return HasVolatileMember(RD, Ctx, Depth + 1);
    return !IsImmutableRecord(RD, Ctx, Depth + 1);
  }
  return !Base.isConstQualified();
}

bool IsImmutableRecord(const clang::RecordDecl *RD, const ASTContext &Ctx,
                       int Depth) {
  const clang::RecordDecl *Def = RD->getDefinition();
  if (Def == nullptr) return false;
  if (const auto *CRD = llvm::dyn_cast<clang::CXXRecordDecl>(Def)) {
    // A lambda whose call operator is const cannot change its captures (its
    // copy assignment is deleted); a `mutable` one can.
    if (CRD->isLambda()) {
      const clang::CXXMethodDecl *Call = CRD->getLambdaCallOperator();
      if (Call != nullptr && !Call->isConst()) return false;
      for (const clang::FieldDecl *F : Def->fields()) {
        if (F->getType()->isReferenceType())
          continue;  // the referent is checked itself
        if (F->getType().isVolatileQualified()) return false;
      }
      return true;
    }
    if (CRD->hasMutableFields() || CRD->isPolymorphic()) return false;
    for (const auto &B : CRD->bases()) {
      const clang::RecordDecl *BD = B.getType()->getAsRecordDecl();
      if (BD == nullptr || !IsImmutableRecord(BD, Ctx, Depth + 1)) return false;
    }
  }
  for (const clang::FieldDecl *F : Def->fields()) {
    QualType FT = F->getType();
    if (FT->isReferenceType()) continue;  // a reference cannot be reseated
    if (IsMutableObject(FT, Ctx, Depth + 1)) return false;
  }
  return true;
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
    if (Cur.isVolatileQualified()) return false;
    if (!Cur.isConstQualified() && IsMutableObject(Cur, Ctx)) return false;
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

// LIFECYCLE shape: no pointer, reference or floating-point value at any depth,
// so the object cannot hold or point at model-derived data (a device pointer,
// a table, a scale); a terminal guard, a shutdown flag or a log ring of
// characters and indices fit.
bool HoldsPointerOrFloat(QualType T, const ASTContext &Ctx, int Depth = 0) {
  if (Depth > 16) return true;
  QualType C = Ctx.getBaseElementType(T.getCanonicalType());
  if (C->isReferenceType() || C->isPointerType() || C->isMemberPointerType() ||
      C->isBlockPointerType() || C->isNullPtrType()) {
    return true;
  }
  if (const auto *AT = C->getAs<clang::AtomicType>()) {
    return HoldsPointerOrFloat(AT->getValueType(), Ctx, Depth + 1);
  }
  if (C->isRealFloatingType() || C->isAnyComplexType()) return true;
  if (const auto *VT =
          C->getAs<clang::VectorType>()) {  // vector_size, ext_vector
    return HoldsPointerOrFloat(VT->getElementType(), Ctx, Depth + 1);
  }
  if (const auto *RD = C->getAsRecordDecl()) {
    const clang::RecordDecl *Def = RD->getDefinition();
    if (Def == nullptr) return true;
    if (const auto *CRD = llvm::dyn_cast<clang::CXXRecordDecl>(Def)) {
      if (CRD->isPolymorphic()) return true;  // a vtable pointer
      for (const auto &B : CRD->bases()) {
        if (HoldsPointerOrFloat(B.getType(), Ctx, Depth + 1)) return true;
      }
    }
    for (const clang::FieldDecl *F : Def->fields()) {
      if (HoldsPointerOrFloat(F->getType(), Ctx, Depth + 1)) return true;
    }
  }
  return false;
}

enum class LatchKind { kNotLatch, kFlag, kBoolLike };

// A file name as the category patterns see it: . and .. resolved
// ("runtime/lifecycle/../../kernels/x.inc" is kernels/x.inc), no leading ./.
std::string NormalPath(StringRef Name) {
  llvm::SmallString<256> P(Name);
  llvm::sys::path::remove_dots(P, /*remove_dot_dot=*/true);
  return std::string(P.str());
}

// Whether Loc's file was found in a system include directory (-isystem, the
// compiler's own). The characteristic the header search gave the file when it
// was entered, not SourceManager::isInSystemHeader's: that one follows line
// markers ('# 1 "x.c" 3') and '#pragma GCC system_header', which any file can
// write to hide what follows.
bool FoundInSystemDir(SourceLocation Loc, const SourceManager &SM) {
  if (Loc.isInvalid()) return false;
  Loc = SM.getExpansionLoc(Loc);
  bool Invalid = false;
  const clang::SrcMgr::SLocEntry &E =
      SM.getSLocEntry(SM.getFileID(Loc), &Invalid);
  if (Invalid || !E.isFile()) return false;
  return clang::SrcMgr::isSystem(E.getFile().getFileCharacteristic());
}

bool InSystemHeader(const clang::Decl *D, const SourceManager &SM) {
  return D != nullptr && FoundInSystemDir(D->getLocation(), SM);
}

bool InStd(const clang::Decl *D) {
  const clang::DeclContext *DC = D->getDeclContext();
  while (DC != nullptr && (DC->isInlineNamespace() || DC->isRecord())) {
    DC = DC->getParent();
  }
  return DC != nullptr && DC->isStdNamespace();
}

// The latch types LOG_ONCE and DIAG_ONCE accept: bool, atomic_bool,
// atomic_flag, once_flag (C or C++), each from the standard headers (a type of
// the same name declared elsewhere can hold anything), or a type that wraps
// exactly one of them and nothing else. Never an integer or an array: a latch
// cannot hold a count or a pointer.
LatchKind ClassifyLatch(QualType T, const SourceManager &SM,
                        const ASTContext &Ctx, int Depth = 0) {
  if (Depth > 8 || T->isArrayType()) return LatchKind::kNotLatch;
  // Typedef names first: glibc's once_flag is a typedef of an anonymous struct.
  QualType Cur = T;
  for (int Step = 0; Step < 32; ++Step) {
    const clang::Type *Ty = Cur.getTypePtr();
    if (const auto *TT = llvm::dyn_cast<clang::TypedefType>(Ty)) {
      const clang::TypedefNameDecl *TD = TT->getDecl();
      StringRef N = TD->getName();
      if (InSystemHeader(TD, SM)) {
        if (N == "once_flag" || N == "atomic_flag") return LatchKind::kFlag;
        if (N == "atomic_bool") return LatchKind::kBoolLike;
      }
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
  if (C->isBooleanType()) return LatchKind::kBoolLike;
  if (const auto *AT = C->getAs<clang::AtomicType>()) {
    return AT->getValueType()->isBooleanType() ? LatchKind::kBoolLike
                                               : LatchKind::kNotLatch;
  }
  const clang::RecordDecl *RD = C->getAsRecordDecl();
  if (RD == nullptr) return LatchKind::kNotLatch;
  StringRef N = RD->getName();
  if (InSystemHeader(RD, SM)) {
    const bool Cxx =
        llvm::isa<clang::CXXRecordDecl>(RD) && Ctx.getLangOpts().CPlusPlus;
    if ((N == "once_flag" || N == "atomic_flag") && (!Cxx || InStd(RD))) {
      return LatchKind::kFlag;
    }
    if (const auto *Spec =
            llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(RD)) {
      if (N == "atomic" && InStd(RD) && Spec->getTemplateArgs().size() == 1 &&
          Spec->getTemplateArgs()[0].getKind() ==
              clang::TemplateArgument::Type &&
          Spec->getTemplateArgs()[0].getAsType()->isBooleanType()) {
        return LatchKind::kBoolLike;
      }
    }
    return LatchKind::kNotLatch;
  }
  // A wrapper: exactly one member, no bases, no virtual functions.
  const clang::RecordDecl *Def = RD->getDefinition();
  if (Def == nullptr) return LatchKind::kNotLatch;
  if (const auto *CRD = llvm::dyn_cast<clang::CXXRecordDecl>(Def)) {
    if (CRD->getNumBases() != 0 || CRD->isPolymorphic())
      return LatchKind::kNotLatch;
  }
  const clang::FieldDecl *Only = nullptr;
  for (const clang::FieldDecl *F : Def->fields()) {
    if (Only != nullptr) return LatchKind::kNotLatch;
    Only = F;
  }
  if (Only == nullptr || Only->isBitField()) return LatchKind::kNotLatch;
  return ClassifyLatch(Only->getType(), SM, Ctx, Depth + 1);
}

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

// What the preprocessor saw that the AST no longer shows: each expansion of
// ATLAS_STATIC (and whether it used the genuine definition from
// lint/atlas_static.h), and the lines of `#pragma clang attribute`.
struct PPFacts {
  std::map<unsigned, bool> MarkExpansions;  // spelling of the name -> genuine
  std::set<std::pair<unsigned, unsigned>>
      PragmaAttributeLines;  // (FileID hash, line)
};

// The genuine ATLAS_STATIC: defined in a file named atlas_static.h as exactly
// __attribute__((annotate("atlas_static:" #CATEGORY))).
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

class MarkTracker : public clang::PPCallbacks {
 public:
  MarkTracker(const SourceManager &SM, PPFacts *Facts) : SM(SM), Facts(Facts) {}

  void MacroExpands(const clang::Token &Name, const clang::MacroDefinition &MD,
                    clang::SourceRange, const clang::MacroArgs *) override {
    const clang::IdentifierInfo *II = Name.getIdentifierInfo();
    if (II == nullptr || II->getName() != kMarkMacro) return;
    Facts->MarkExpansions[SM.getSpellingLoc(Name.getLocation())
                              .getRawEncoding()] =
        IsGenuineMark(MD.getMacroInfo(), SM);
  }

  // Every physical line of a `#pragma clang attribute` directive, however it
  // is spelled: any white space, comments, line continuations.
  void PragmaDirective(SourceLocation Loc,
                       clang::PragmaIntroducerKind) override {
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

 private:
  const SourceManager &SM;
  PPFacts *Facts;
};

class StrayStaticsCheck : public clang::tidy::ClangTidyCheck {
 public:
  StrayStaticsCheck(StringRef Name, clang::tidy::ClangTidyContext *Context)
      : ClangTidyCheck(Name, Context),
        CudaHostFiles(Options.get("CudaHostFiles", kDefaultCudaHostFiles)),
        CudaHostRegex(CudaHostFiles),
        LifecycleFiles(Options.get("LifecycleFiles", kDefaultLifecycleFiles)),
        LifecycleRegex(LifecycleFiles),
        CategoriesOption(Options.get("Categories", kDefaultCategories)),
        StrayAdvice(Options.get("StrayAdvice", kDefaultStrayAdvice)),
        // Options are read as strings: the bool overloads of get/store are not
        // exported by the clang-tidy executable a plugin resolves against.
        SkipSystemHeaders(
            llvm::StringRef(Options.get("SkipSystemHeaders", "true"))
                .equals_insensitive("true")) {
    llvm::SmallVector<StringRef, 8> Parts;
    StringRef(CategoriesOption).split(Parts, ',', -1, false);
    for (StringRef P : Parts) {
      if (!P.trim().empty()) Categories.push_back(P.trim().str());
    }
  }

  void storeOptions(clang::tidy::ClangTidyOptions::OptionMap &Opts) override {
    Options.store(Opts, "CudaHostFiles", CudaHostFiles);
    Options.store(Opts, "LifecycleFiles", LifecycleFiles);
    Options.store(Opts, "Categories", CategoriesOption);
    Options.store(Opts, "StrayAdvice", StrayAdvice);
    Options.store(Opts, "SkipSystemHeaders",
                  SkipSystemHeaders ? "true" : "false");
  }

  void registerPPCallbacks(const SourceManager &SM, clang::Preprocessor *PP,
                           clang::Preprocessor *) override {
    Facts = PPFacts();
    PP->addPPCallbacks(std::make_unique<MarkTracker>(SM, &Facts));
  }

  void registerMatchers(clang::ast_matchers::MatchFinder *Finder) override {
    using namespace clang::ast_matchers;
    if (SkipSystemHeaders) {
      Finder->addMatcher(translationUnitDecl().bind("tu"), this);
    }
    Finder->addMatcher(
        varDecl(unless(isImplicit()), unless(parmVarDecl())).bind("var"), this);
  }

  void check(
      const clang::ast_matchers::MatchFinder::MatchResult &Result) override;
  void onEndOfTranslationUnit() override;

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

  // A finding, emitted at the end of the translation unit (when the const
  // fix-it can know whether anything writes the variable).
  struct Finding {
    const VarDecl *VD = nullptr;
    SourceLocation At;
    std::string Message;
    bool Stray = false;        // unmarked and mutable: fix-its apply
    std::string FitsCategory;  // the one category whose shape it fits
  };

  void Report(const VarDecl *VD, SourceLocation At, std::string Message,
              bool Stray = false, std::string Fits = "");
  void Emit(const Finding &F, bool OfferConst);
  void LimitTraversal(const clang::TranslationUnitDecl *TU, ASTContext *Ctx,
                      const SourceManager &SM);
  bool CategoryAllowed(StringRef Name) const;
  std::string FittingCategory(const VarDecl *VD, const SourceManager &SM,
                              const ASTContext &Ctx) const;
  void CheckCompoundLiterals(const VarDecl *VD, const SourceManager &SM,
                             const ASTContext &Ctx);
  void CheckInstantiation(const VarDecl *VD, const VarDecl *Pattern,
                          const SourceManager &SM, const ASTContext &Ctx);

  const std::string CudaHostFiles;
  const llvm::Regex CudaHostRegex;
  const std::string LifecycleFiles;
  const llvm::Regex LifecycleRegex;
  const std::string CategoriesOption;
  std::vector<std::string> Categories;
  const std::string StrayAdvice;
  // Restrict the AST traversal of the run to declarations outside system
  // headers: statics there are not ours, and walking libc's declarations cost
  // more than the check itself. Off when combined with checks that need them.
  const bool SkipSystemHeaders;

  PPFacts Facts;
  std::vector<Finding> Findings;
  ASTContext *Context = nullptr;
};

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
  Findings.clear();
  Context = nullptr;
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
      NormalPath(SM.getFilename(SM.getExpansionLoc(VD->getLocation())));
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

void StrayStaticsCheck::check(
    const clang::ast_matchers::MatchFinder::MatchResult &Result) {
  Context = Result.Context;
  if (const auto *TU =
          Result.Nodes.getNodeAs<clang::TranslationUnitDecl>("tu")) {
    LimitTraversal(TU, Result.Context, *Result.SourceManager);
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
  for (const clang::DeclContext *DC = VD->getDeclContext();
       DC != nullptr && !Instantiated; DC = DC->getParent()) {
    if (const auto *FD = llvm::dyn_cast<clang::FunctionDecl>(DC)) {
      if (FD->isTemplateInstantiation()) {
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

  // Collect the marks: only the genuine ATLAS_STATIC macro, spelled at the
  // declaration, counts.
  std::string CategoryName;
  Category Cat = Category::kNone;
  SourceLocation FirstLoc = SM.getExpansionLoc(VD->getBeginLoc());
  bool Conflict = false;
  std::string BadMark;
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
      BadMark =
          "its atlas_static annotation is applied by '#pragma clang "
          "attribute'";
      continue;
    }
    if (A->isInherited()) {
      BadMark = "its ATLAS_STATIC mark is on another declaration of it";
      continue;
    }
    if (!MarkTok.isValid()) {
      BadMark =
          "its atlas_static annotation is a raw attribute, not the "
          "ATLAS_STATIC macro";
      continue;
    }
    auto It =
        Facts.MarkExpansions.find(SM.getSpellingLoc(MarkTok).getRawEncoding());
    if (It == Facts.MarkExpansions.end() || !It->second) {
      BadMark =
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
      BadMark = "its ATLAS_STATIC mark comes from the body of macro '" +
                OutermostMacro(MarkTok, SM, Ctx.getLangOpts()) +
                "', not from the declaration";
      continue;
    }
    SourceLocation ML = SM.getExpansionLoc(MarkTok);
    if (ML.isValid() && SM.isBeforeInTranslationUnit(ML, FirstLoc))
      FirstLoc = ML;
    if (Cat != Category::kNone && Name != CategoryName) Conflict = true;
    CategoryName = Name.str();
    Cat = BuiltinCategory(Name);
  }

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
    if (!Mutable) return;
    Report(VD, At,
           What + " is in none of the allowed categories: " + StrayAdvice,
           /*Stray=*/true, FittingCategory(VD, SM, Ctx));
    return;
  }
  if (Conflict) {
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
  const std::string Path = NormalPath(SM.getFilename(At));
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
    Report(VD, At,
           "marked static " + Subj.Quoted() +
               " has no comment arguing its case: write one that starts "
               "on its own line and ends on the line directly above the "
               "declaration");
  }
}

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
