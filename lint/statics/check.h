// The atlas-stray-statics check: its options, its findings, and the parts
// that judge a declaration (stray_statics_check.cc), emit findings with their
// fix-its (statics/emit.cc) and report what a parse could not check
// (statics/unchecked.cc).
#ifndef ATLAS_LINT_STATICS_CHECK_H_
#define ATLAS_LINT_STATICS_CHECK_H_

#include <string>
#include <vector>

#include "clang-tidy/ClangTidyCheck.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Preprocessor.h"
#include "lint/statics/pp_facts.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Regex.h"

namespace atlas_lint {

using clang::ASTContext;
using clang::QualType;
using clang::SourceLocation;
using clang::SourceManager;
using clang::VarDecl;
using llvm::StringRef;

constexpr char kCheckName[] = "atlas-stray-statics";
constexpr char kAnnotationPrefix[] = "atlas_static:";
// Matched against the file's workspace-relative path with . and .. resolved
// (a path spelled through runtime/lifecycle/../ is not in it): Atlas's files.
constexpr char kDefaultCudaHostFiles[] = "^runtime/cuda/cuda_host\\.c$";
constexpr char kDefaultLifecycleFiles[] = "^runtime/lifecycle(/|\\.c$)";
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

Category BuiltinCategory(StringRef Name);

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
    // Also what sets the context when no variable matches (the report of
    // what a parse could not check needs it).
    Finder->addMatcher(translationUnitDecl().bind("tu"), this);
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

  struct Mark {
    std::string CategoryName;
    Category Cat = Category::kNone;
    SourceLocation FirstLoc;  // the mark's or the declaration's start
    bool Conflict = false;
    std::string BadMark;  // why a mark-like attribute is not a mark
  };

  Mark ReadMark(const VarDecl *VD, const SourceManager &SM,
                const ASTContext &Ctx);
  void CheckShape(const VarDecl *VD, const Subject &Subj, const Mark &M,
                  SourceLocation At, bool Mutable, const SourceManager &SM,
                  const ASTContext &Ctx);
  void CheckComment(const Subject &Subj, const Mark &M, const VarDecl *VD,
                    SourceLocation At, const SourceManager &SM);
  bool CheckIncludedSource(const VarDecl *VD, const Subject &Subj,
                           const Mark &M, SourceLocation At,
                           const SourceManager &SM);
  void ReportUnchecked();
  bool DeclaredActive(const std::string &Name) const;
  void ReportInactiveBranches(const SourceManager &SM);
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

// The enclosing function of a static local, qualified, or empty.
std::string EnclosingFunction(const VarDecl *VD);
// The outermost macro whose expansion produced Loc, or empty.
std::string OutermostMacro(SourceLocation Loc, const SourceManager &SM,
                           const clang::LangOptions &LO);

}  // namespace atlas_lint

#endif  // ATLAS_LINT_STATICS_CHECK_H_
