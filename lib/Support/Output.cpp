//===- Output.cpp
//-----------------------------------------------------------===//
#include "hetpar/Support/Output.h"

#include "llvm/Support/FileSystem.h"

namespace hetpar {

/// Flushes `os` and turns a stream error into an llvm::Error naming `what`.
static llvm::Error checkStream(llvm::raw_fd_ostream &os, llvm::StringRef what) {
  os.flush();
  if (!os.has_error())
    return llvm::Error::success();
  std::error_code ec = os.error();
  os.clear_error();
  return llvm::createStringError(ec, "cannot write %s: %s", what.str().c_str(),
                                 ec.message().c_str());
}

llvm::Error writeOutput(llvm::StringRef path,
                        llvm::function_ref<void(llvm::raw_ostream &)> body) {
  if (path == "-") {
    body(llvm::outs());
    return checkStream(llvm::outs(), "to stdout");
  }
  std::string quoted = "'" + path.str() + "'";
  // Write through a symbolic link to its target.
  llvm::SmallString<256> resolved(path);
  if (llvm::sys::fs::is_symlink_file(path)) {
    if (llvm::sys::fs::real_path(path, resolved))
      return llvm::createStringError(
          std::errc::no_such_file_or_directory,
          "cannot write %s: it is a dangling symbolic link", quoted.c_str());
    path = resolved;
  }
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(path, status) &&
      status.type() != llvm::sys::fs::file_type::regular_file) {
    if (status.type() == llvm::sys::fs::file_type::directory_file)
      return llvm::createStringError(std::errc::is_a_directory,
                                     "cannot write %s: it is a directory",
                                     quoted.c_str());
    // A device or FIFO: write in place (renaming over it would replace it).
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec)
      return llvm::createStringError(ec, "cannot write %s: %s", quoted.c_str(),
                                     ec.message().c_str());
    body(os);
    return checkStream(os, quoted);
  }
  auto temp = llvm::sys::fs::TempFile::create(path + ".tmp-%%%%%%");
  if (!temp) {
    std::string why = llvm::toString(temp.takeError());
    return llvm::createStringError(std::errc::io_error, "cannot write %s: %s",
                                   quoted.c_str(), why.c_str());
  }
  llvm::Error written = llvm::Error::success();
  {
    llvm::raw_fd_ostream os(temp->FD, /*shouldClose=*/false);
    body(os);
    written = checkStream(os, quoted);
  }
  if (written) {
    llvm::consumeError(temp->discard());
    return written;
  }
  // The replacement keeps the permissions of the file it replaces.
  if (!llvm::sys::fs::status(path, status))
    (void)llvm::sys::fs::setPermissions(temp->TmpName, status.permissions());
  if (llvm::Error err = temp->keep(path)) {
    std::string why = llvm::toString(std::move(err));
    return llvm::createStringError(std::errc::io_error, "cannot write %s: %s",
                                   quoted.c_str(), why.c_str());
  }
  return llvm::Error::success();
}

llvm::Error checkNotAnInput(llvm::StringRef output,
                            llvm::ArrayRef<std::string> inputs) {
  if (output == "-")
    return llvm::Error::success();
  for (const std::string &input : inputs)
    if (llvm::sys::fs::equivalent(input, output))
      return llvm::createStringError(std::errc::file_exists,
                                     "the output '%s' is an input ('%s')",
                                     output.str().c_str(), input.c_str());
  return llvm::Error::success();
}

} // namespace hetpar
