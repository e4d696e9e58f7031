/* Run one command with a payload piped to its stdin and report the child's
 * own CPU time, wall time, peak RSS and page faults from wait4(2).
 *
 * A small launcher matters for the RSS figure: a child's ru_maxrss includes
 * the memory it inherited before exec, so forking from a large process
 * (Python) would report the parent's size, not the command's.
 *
 * Usage: bench-hook-launch PAYLOAD_FILE CMD [ARGS...]
 * Prints: cpu_us wall_us maxrss_kib exit_status
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <signal.h>

static long long now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s PAYLOAD_FILE CMD [ARGS...]\n", argv[0]);
        return 2;
    }
    int in = open(argv[1], O_RDONLY);
    if (in < 0) { perror(argv[1]); return 2; }
    struct stat st;
    fstat(in, &st);
    char *buf = malloc(st.st_size + 1);
    ssize_t got = 0;
    while (got < st.st_size) {
        ssize_t n = read(in, buf + got, st.st_size - got);
        if (n <= 0) break;
        got += n;
    }
    close(in);
    signal(SIGPIPE, SIG_IGN);
    int fds[2];
    if (pipe(fds) != 0) { perror("pipe"); return 2; }
    long long t0 = now_us();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[0], 0);
        close(fds[0]);
        close(fds[1]);
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(devnull, 2);
        execv(argv[2], argv + 2);
        _exit(127);
    }
    close(fds[0]);
    ssize_t off = 0;
    while (off < got) {
        ssize_t n = write(fds[1], buf + off, got - off);
        if (n <= 0) break;
        off += n;
    }
    close(fds[1]);
    int status = 0;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    long long wall = now_us() - t0;
    long long cpu = (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec +
                    (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec;
    printf("%lld %lld %ld %d %ld\n", cpu, wall, ru.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
           ru.ru_minflt + ru.ru_majflt);
    return 0;
}
