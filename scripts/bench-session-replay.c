/* Replay a session through a hook command, one call after another, as an
 * agent runs it, and report what it cost, the processes the hook left
 * behind included.
 *
 * The replayer makes itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER),
 * so a detached drainer that a hook starts (setsid, then orphaned when the
 * hook exits) is re-parented to it instead of init: it is reaped here and its
 * CPU time lands in getrusage(RUSAGE_CHILDREN) with the hooks'.
 *
 * Usage: bench-session-replay LIST_FILE LINGER_MS DONE_FILE EXPECTED
 *   LIST_FILE: one call per line, tab-separated: payload file, then argv.
 *   LINGER_MS: how long after the last call to count processes left.
 *   DONE_FILE: a drainer counters file (`counters/store.json`); the replay
 *              is "delivered" once its "delivered" count reaches EXPECTED
 *              ("-" for none).
 * Prints key=value lines (times in microseconds, memory in KiB).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CALLS 4096
#define MAX_ARGS 32

static long long now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static long long cpu_us(const struct rusage *ru) {
    return (long long)ru->ru_utime.tv_sec * 1000000LL + ru->ru_utime.tv_usec +
           (long long)ru->ru_stime.tv_sec * 1000000LL + ru->ru_stime.tv_usec;
}

static char *slurp(const char *path, ssize_t *len) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return NULL;
    struct stat st;
    fstat(fd, &st);
    char *buf = malloc(st.st_size + 1);
    ssize_t got = 0;
    while (got < st.st_size) {
        ssize_t n = read(fd, buf + got, st.st_size - got);
        if (n <= 0) break;
        got += n;
    }
    close(fd);
    buf[got] = 0;
    *len = got;
    return buf;
}

/* The "delivered" count in a drainer counters file, or -1. */
static long delivered(const char *path) {
    ssize_t len;
    char *s = slurp(path, &len);
    if (!s) return -1;
    char *p = strstr(s, "\"delivered\"");
    long n = -1;
    if (p && (p = strchr(p, ':'))) n = strtol(p + 1, NULL, 10);
    free(s);
    return n;
}

/* Children of this process still alive (not zombies), from /proc. */
static int live_children(void) {
    DIR *d = opendir("/proc");
    if (!d) return -1;
    int n = 0;
    pid_t me = getpid();
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        int fd = open(path, O_RDONLY);
        if (fd < 0) continue;
        ssize_t r = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (r <= 0) continue;
        buf[r] = 0;
        char *rp = strrchr(buf, ')');
        if (!rp) continue;
        char state;
        int ppid;
        if (sscanf(rp + 2, "%c %d", &state, &ppid) == 2 && ppid == me && state != 'Z') n++;
    }
    closedir(d);
    return n;
}

static int others_reaped = 0;
static long long last_other_exit = 0;

/* Reap whatever has exited (drainers); never blocks. */
static void reap_others(void) {
    int status;
    while (waitpid(-1, &status, WNOHANG) > 0) {
        others_reaped++;
        last_other_exit = now_us();
    }
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s LIST_FILE LINGER_MS DONE_FILE EXPECTED\n", argv[0]);
        return 2;
    }
    long linger_ms = atol(argv[2]);
    const char *done_file = strcmp(argv[3], "-") ? argv[3] : NULL;
    long expected = atol(argv[4]);
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) { perror("prctl"); return 2; }
    signal(SIGPIPE, SIG_IGN);

    ssize_t list_len;
    char *list = slurp(argv[1], &list_len);
    if (!list) { perror(argv[1]); return 2; }
    static char *calls[MAX_CALLS][MAX_ARGS + 2];
    static char *payloads[MAX_CALLS];
    static ssize_t payload_len[MAX_CALLS];
    int ncalls = 0;
    for (char *line = strtok(list, "\n"); line && ncalls < MAX_CALLS; line = strtok(NULL, "\n")) {
        char *save, *tok = strtok_r(line, "\t", &save);
        payloads[ncalls] = slurp(tok, &payload_len[ncalls]);
        if (!payloads[ncalls]) { perror(tok); return 2; }
        int a = 0;
        while ((tok = strtok_r(NULL, "\t", &save)) && a < MAX_ARGS) calls[ncalls][a++] = tok;
        calls[ncalls][a] = NULL;
        ncalls++;
    }

    long long hooks_cpu = 0, max_call_wall = 0;
    long max_rss = 0;
    int failed = 0;
    long long t0 = now_us();
    for (int i = 0; i < ncalls; i++) {
        int fds[2];
        if (pipe(fds) != 0) { perror("pipe"); return 2; }
        long long c0 = now_us();
        pid_t pid = fork();
        if (pid == 0) {
            dup2(fds[0], 0);
            close(fds[0]);
            close(fds[1]);
            int devnull = open("/dev/null", O_WRONLY);
            dup2(devnull, 1);
            dup2(devnull, 2);
            execv(calls[i][0], calls[i]);
            _exit(127);
        }
        close(fds[0]);
        ssize_t off = 0;
        while (off < payload_len[i]) {
            ssize_t n = write(fds[1], payloads[i] + off, payload_len[i] - off);
            if (n <= 0) break;
            off += n;
        }
        close(fds[1]);
        int status = 0;
        struct rusage ru;
        while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {}
        long long w = now_us() - c0;
        if (w > max_call_wall) max_call_wall = w;
        hooks_cpu += cpu_us(&ru);
        if (ru.ru_maxrss > max_rss) max_rss = ru.ru_maxrss;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed++;
        reap_others();
    }
    long long t_last = now_us();

    /* After the last call: when is everything delivered, and what is left
     * running LINGER_MS later? */
    long long t_done = -1;
    int left = -1;
    for (;;) {
        reap_others();
        long long t = now_us();
        if (done_file && t_done < 0 && delivered(done_file) >= expected) t_done = t;
        if (t - t_last >= linger_ms * 1000LL) {
            left = live_children();
            break;
        }
        usleep(2000);
    }
    /* Wait for the rest (bounded by the drainer's own budget) so that
     * RUSAGE_CHILDREN holds every process the replay caused. */
    int status;
    while (waitpid(-1, &status, 0) > 0) {
        others_reaped++;
        last_other_exit = now_us();
    }
    struct rusage all;
    getrusage(RUSAGE_CHILDREN, &all);

    printf("calls=%d\n", ncalls);
    printf("failed=%d\n", failed);
    printf("replay_wall_us=%lld\n", t_last - t0);
    printf("max_call_wall_us=%lld\n", max_call_wall);
    printf("hooks_cpu_us=%lld\n", hooks_cpu);
    printf("all_cpu_us=%lld\n", cpu_us(&all));
    printf("hook_max_rss_kib=%ld\n", max_rss);
    printf("all_max_rss_kib=%ld\n", all.ru_maxrss);
    printf("other_processes=%d\n", others_reaped);
    printf("last_other_exit_after_us=%lld\n", others_reaped ? last_other_exit - t_last : 0);
    printf("delivered_after_us=%lld\n", t_done < 0 ? -1 : t_done - t_last);
    printf("left_after_linger=%d\n", left);
    return 0;
}
