#include "core/data/file_io.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A fresh directory per test, so the leftover checks see only its files.
std::string FreshDirectory(const std::string& name) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/file_io_", name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Names containing ".tmp." in `dir`: temporary files left behind.
std::vector<std::string> Leftovers(const std::string& dir) {
  std::vector<std::string> found;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".tmp.") != std::string::npos) found.push_back(name);
  }
  return found;
}

struct stat LinkStat(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(lstat(path.c_str(), &info), 0) << path << ": " << std::strerror(errno);
  return info;
}

mode_t PermissionBits(const std::string& path) { return LinkStat(path).st_mode & 07777; }

std::string ReadOrDie(const std::string& path) {
  absl::StatusOr<std::string> contents = ReadFileToString(path);
  EXPECT_TRUE(contents.ok()) << contents.status();
  return contents.ok() ? *contents : "";
}

// What the link at `path` holds; empty (and a failure) if it is no link.
std::string ReadLink(const std::string& path) {
  std::error_code error;
  const fs::path held = fs::read_symlink(path, error);
  EXPECT_FALSE(error) << path << " is no symbolic link: " << error.message();
  return held.string();
}

TEST(WriteFileAtomicallyTest, ReplacesARegularFileKeepingItsMode) {
  const std::string dir = FreshDirectory("regular");
  const std::string path = dir + "/out.txt";
  for (const mode_t mode : {0444, 0600, 0751}) {
    ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
    ASSERT_EQ(chmod(path.c_str(), mode), 0);
    const absl::Status status = WriteFileAtomically(path, absl::StrCat("new ", mode));
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_EQ(ReadOrDie(path), absl::StrCat("new ", mode));
    EXPECT_TRUE(S_ISREG(LinkStat(path).st_mode));
    // Root can write a 0444 file anyway: the bits themselves are checked.
    EXPECT_EQ(PermissionBits(path), mode) << std::oct << mode;
  }
  EXPECT_THAT(Leftovers(dir), IsEmpty());
}

TEST(WriteFileAtomicallyTest, ANewFileGetsTheUmasksMode) {
  const std::string dir = FreshDirectory("umask");
  const mode_t saved = umask(002);
  const absl::Status status = WriteFileAtomically(dir + "/new.txt", "fresh");
  umask(saved);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(ReadOrDie(dir + "/new.txt"), "fresh");
  EXPECT_EQ(PermissionBits(dir + "/new.txt"), 0664u);
}

TEST(WriteFileAtomicallyTest, ASymbolicLinkStaysALinkAndItsTargetIsReplaced) {
  const std::string dir = FreshDirectory("symlink");
  fs::create_directories(dir + "/real");
  const std::string target = dir + "/real/model.txt";
  ASSERT_TRUE(WriteFileAtomically(target, "old").ok());
  ASSERT_EQ(chmod(target.c_str(), 0640), 0);
  // Relative: resolved against the link's own directory, not the cwd.
  const std::string link = dir + "/out.txt";
  fs::create_symlink("real/model.txt", link);

  const absl::Status status = WriteFileAtomically(link, "new");
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_TRUE(S_ISLNK(LinkStat(link).st_mode));
  EXPECT_EQ(ReadLink(link), "real/model.txt");
  EXPECT_EQ(ReadOrDie(target), "new");
  EXPECT_EQ(PermissionBits(target), 0640u);
  EXPECT_THAT(Leftovers(dir), IsEmpty());
  EXPECT_THAT(Leftovers(dir + "/real"), IsEmpty());
}

TEST(WriteFileAtomicallyTest, AChainOfLinksIsFollowedToTheFile) {
  const std::string dir = FreshDirectory("chain");
  const std::string file = dir + "/file.txt";
  ASSERT_TRUE(WriteFileAtomically(file, "old").ok());
  fs::create_symlink(file, dir + "/a");  // Absolute.
  fs::create_symlink("a", dir + "/b");   // Relative.
  fs::create_symlink("b", dir + "/c");

  const absl::Status status = WriteFileAtomically(dir + "/c", "new");
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(ReadLink(dir + "/c"), "b");
  EXPECT_EQ(ReadLink(dir + "/b"), "a");
  EXPECT_EQ(ReadLink(dir + "/a"), file);
  EXPECT_TRUE(S_ISREG(LinkStat(file).st_mode));
  EXPECT_EQ(ReadOrDie(file), "new");
  EXPECT_THAT(Leftovers(dir), IsEmpty());
}

TEST(WriteFileAtomicallyTest, ADanglingLinkGetsTheFileItNames) {
  const std::string dir = FreshDirectory("dangling");
  fs::create_symlink("not_yet.txt", dir + "/out.txt");

  const absl::Status status = WriteFileAtomically(dir + "/out.txt", "created");
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_TRUE(S_ISLNK(LinkStat(dir + "/out.txt").st_mode));
  EXPECT_TRUE(S_ISREG(LinkStat(dir + "/not_yet.txt").st_mode));
  EXPECT_EQ(ReadOrDie(dir + "/not_yet.txt"), "created");
  EXPECT_THAT(Leftovers(dir), IsEmpty());
}

TEST(WriteFileAtomicallyTest, ALoopOfLinksIsAnErrorNamingThePath) {
  const std::string dir = FreshDirectory("loop");
  fs::create_symlink("b", dir + "/a");
  fs::create_symlink("a", dir + "/b");

  const absl::Status status = WriteFileAtomically(dir + "/a", "x");
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(dir + "/a"));
  EXPECT_THAT(status.message(), HasSubstr(std::strerror(ELOOP)));
  EXPECT_EQ(ReadLink(dir + "/a"), "b");
  EXPECT_THAT(Leftovers(dir), IsEmpty());
}

TEST(WriteFileAtomicallyTest, AFifosReaderGetsExactlyTheContents) {
  const std::string dir = FreshDirectory("fifo");
  const std::string fifo = dir + "/out.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // The reader opens a second name of the same FIFO, so that a writer that
  // wrongly replaced `fifo` cannot leave it waiting forever (see below).
  const std::string spare = dir + "/spare.fifo";
  ASSERT_EQ(link(fifo.c_str(), spare.c_str()), 0);
  // Several times a pipe's buffer: the reader must be draining it as the
  // writer streams.
  std::string contents;
  for (int i = 0; contents.size() < (1 << 19); ++i) absl::StrAppend(&contents, "line ", i, "\n");

  std::string received;
  std::thread reader([&] {
    const int fd = open(spare.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    char buffer[4096];
    ssize_t n;
    while ((n = read(fd, buffer, sizeof(buffer))) > 0) received.append(buffer, n);
    close(fd);
  });
  const absl::Status status = WriteFileAtomically(fifo, contents);
  const bool still_fifo = S_ISFIFO(LinkStat(fifo).st_mode);
  if (!still_fifo) close(open(spare.c_str(), O_WRONLY | O_CLOEXEC));  // Releases the reader.
  reader.join();

  ASSERT_TRUE(status.ok()) << status;
  EXPECT_TRUE(still_fifo);
  EXPECT_EQ(received.size(), contents.size());
  EXPECT_TRUE(received == contents);
  EXPECT_THAT(Leftovers(dir), IsEmpty());
}

TEST(WriteFileAtomicallyTest, ACharacterDeviceIsWrittenInPlace) {
  const std::string dir = FreshDirectory("device");
  // A copy of /dev/null first: a writer that replaced devices would only
  // break this copy, and the ASSERT keeps it away from the real one.
  const std::string null_copy = dir + "/null";
  if (mknod(null_copy.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    GTEST_SKIP() << "mknod: " << std::strerror(errno)
                 << "; /dev/null is written only after its copy is";
  }
  absl::Status status = WriteFileAtomically(null_copy, "into the void");
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_TRUE(S_ISCHR(LinkStat(null_copy).st_mode));
  ASSERT_EQ(LinkStat(null_copy).st_rdev, makedev(1, 3));
  ASSERT_THAT(Leftovers(dir), IsEmpty());

  status = WriteFileAtomically("/dev/null", "into the void");
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_TRUE(S_ISCHR(LinkStat("/dev/null").st_mode));
  EXPECT_THAT(Leftovers("/dev"), IsEmpty());
}

TEST(WriteFileAtomicallyTest, AnOpenDescriptorIsAppendedToInPlace) {
  // /proc/self/fd/N of a pipe reads back as "pipe:[inode]", no file name.
  int pipe_ends[2];
  ASSERT_EQ(pipe(pipe_ends), 0);
  absl::Status status =
      WriteFileAtomically(absl::StrCat("/proc/self/fd/", pipe_ends[1]), "through the pipe");
  close(pipe_ends[1]);
  std::string received(64, '\0');
  received.resize(std::max<ssize_t>(0, read(pipe_ends[0], &received[0], received.size())));
  close(pipe_ends[0]);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(received, "through the pipe");

  // A file a shell opened with `>>`: what it holds is kept, and it stays
  // the same file (the shell's descriptor would miss a replacement).
  const std::string dir = FreshDirectory("descriptor");
  const std::string log = dir + "/log.txt";
  ASSERT_TRUE(WriteFileAtomically(log, "before\n").ok());
  const ino_t inode = LinkStat(log).st_ino;
  const int fd = open(log.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  status = WriteFileAtomically(absl::StrCat("/dev/fd/", fd), "after\n");
  close(fd);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(ReadOrDie(log), "before\nafter\n");
  EXPECT_EQ(LinkStat(log).st_ino, inode);
  ASSERT_THAT(Leftovers(dir), IsEmpty());

  // Hence /dev/stdout, here a pipe standing in for fd 1 (checked after the
  // two above, which a writer that replaced links would fail harmlessly).
  ASSERT_TRUE(S_ISLNK(LinkStat("/dev/stdout").st_mode));
  ASSERT_EQ(pipe(pipe_ends), 0);
  std::fflush(stdout);
  const int saved_stdout = dup(STDOUT_FILENO);
  ASSERT_GE(saved_stdout, 0);
  dup2(pipe_ends[1], STDOUT_FILENO);
  status = WriteFileAtomically("/dev/stdout", "to stdout");
  dup2(saved_stdout, STDOUT_FILENO);
  close(saved_stdout);
  close(pipe_ends[1]);
  received.assign(64, '\0');
  received.resize(std::max<ssize_t>(0, read(pipe_ends[0], &received[0], received.size())));
  close(pipe_ends[0]);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(received, "to stdout");
  EXPECT_TRUE(S_ISLNK(LinkStat("/dev/stdout").st_mode));
  EXPECT_THAT(Leftovers("/dev"), IsEmpty());
}

TEST(WriteFileAtomicallyTest, ADirectoryIsAnErrorNamingIt) {
  const std::string dir = FreshDirectory("directory");
  const std::string target = dir + "/outputs";
  fs::create_directories(target);
  const absl::Status status = WriteFileAtomically(target, "x");
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(target));
  EXPECT_THAT(status.message(), HasSubstr(std::strerror(EISDIR)));
  EXPECT_TRUE(fs::is_directory(target));
  EXPECT_THAT(Leftovers(dir), IsEmpty());
}

TEST(WriteFileAtomicallyTest, APathUnderAFileIsAnErrorThatKeepsTheFile) {
  const std::string dir = FreshDirectory("under_file");
  const std::string file = dir + "/plain.txt";
  ASSERT_TRUE(WriteFileAtomically(file, "kept").ok());
  const absl::Status status = WriteFileAtomically(file + "/inner.txt", "x");
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(file + "/inner.txt"));
  EXPECT_THAT(status.message(), HasSubstr(std::strerror(ENOTDIR)));
  EXPECT_EQ(ReadOrDie(file), "kept");
  EXPECT_THAT(Leftovers(dir), IsEmpty());
}

TEST(WriteFileAtomicallyTest, AFailedWriteKeepsTheOldFile) {
  const std::string dir = FreshDirectory("failed_write");
  const std::string path = dir + "/out.txt";
  ASSERT_TRUE(WriteFileAtomically(path, "the old contents").ok());
  // Root writes anywhere, but not past RLIMIT_FSIZE: the write fails with
  // EFBIG midway (SIGXFSZ ignored). Nothing may print while it holds.
  rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto saved_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = 8;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const absl::Status status = WriteFileAtomically(path, std::string(4096, 'n'));
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, saved_handler);

  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(path));
  EXPECT_THAT(status.message(), HasSubstr(std::strerror(EFBIG)));
  EXPECT_EQ(ReadOrDie(path), "the old contents");
  EXPECT_THAT(Leftovers(dir), IsEmpty());
}

TEST(WriteFileAtomicallyTest, ALinkPlantedAtThePidNamedTemporaryIsNotFollowed) {
  const std::string dir = FreshDirectory("planted");
  const std::string path = dir + "/out.txt";
  const std::string victim = dir + "/victim.txt";
  ASSERT_TRUE(WriteFileAtomically(victim, "precious").ok());
  // The name the old writer always used: another user could plant it.
  const std::string planted = absl::StrCat(path, ".tmp.", getpid());
  fs::create_symlink(victim, planted);

  const absl::Status status = WriteFileAtomically(path, "mine");
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(ReadOrDie(victim), "precious");
  EXPECT_TRUE(S_ISREG(LinkStat(path).st_mode));
  EXPECT_EQ(ReadOrDie(path), "mine");
  fs::remove(planted);
  EXPECT_THAT(Leftovers(dir), IsEmpty());
}

TEST(AtomicFileWriterTest, AppendsInPiecesAndReplacesOnCommit) {
  const std::string dir = FreshDirectory("writer");
  const std::string path = dir + "/checkpoint.bin";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  ASSERT_EQ(chmod(path.c_str(), 0444), 0);

  absl::StatusOr<AtomicFileWriter> writer = AtomicFileWriter::Create(path);
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_EQ(writer->path(), path);
  ASSERT_TRUE(writer->Append("xxxx").ok());
  ASSERT_TRUE(writer->Append(" first").ok());
  ASSERT_TRUE(writer->Append(" second").ok());
  ASSERT_TRUE(writer->WriteAt(0, "head").ok());
  // Until Commit, readers see the old file; the pieces are in one temporary.
  EXPECT_EQ(ReadOrDie(path), "old");
  EXPECT_EQ(Leftovers(dir).size(), 1u);

  const absl::Status committed = writer->Commit();
  ASSERT_TRUE(committed.ok()) << committed;
  EXPECT_EQ(ReadOrDie(path), "head first second");
  EXPECT_EQ(PermissionBits(path), 0444u);
  EXPECT_THAT(Leftovers(dir), IsEmpty());
  EXPECT_EQ(writer->Append("late").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(writer->Commit().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(AtomicFileWriterTest, WithoutCommitTheOldFileStaysAndNoTemporary) {
  const std::string dir = FreshDirectory("abandoned");
  const std::string path = dir + "/checkpoint.bin";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  {
    absl::StatusOr<AtomicFileWriter> writer = AtomicFileWriter::Create(path);
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE(writer->Append("half a checkpoint").ok());
    // A moved-from writer owns nothing: only the moved-to one cleans up.
    AtomicFileWriter moved(std::move(*writer));
    ASSERT_TRUE(moved.Append(" and more").ok());
  }
  EXPECT_EQ(ReadOrDie(path), "old");
  EXPECT_THAT(Leftovers(dir), IsEmpty());
}

TEST(AtomicFileWriterTest, ThroughALinkTheLinkStays) {
  const std::string dir = FreshDirectory("writer_link");
  ASSERT_TRUE(WriteFileAtomically(dir + "/real.bin", "old").ok());
  fs::create_symlink("real.bin", dir + "/link.bin");
  absl::StatusOr<AtomicFileWriter> writer = AtomicFileWriter::Create(dir + "/link.bin");
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE(writer->Append("new").ok());
  ASSERT_TRUE(writer->Commit().ok());
  EXPECT_EQ(ReadLink(dir + "/link.bin"), "real.bin");
  EXPECT_EQ(ReadOrDie(dir + "/real.bin"), "new");
  EXPECT_THAT(Leftovers(dir), IsEmpty());
}

}  // namespace
}  // namespace tfm
