// Constants shared by reaper.c and the Go side (reaper.go); the package's
// tests check that both agree.
#ifndef TVS_REAPER_H
#define TVS_REAPER_H

#define TVS_REAPER_ARG "__termverify-sandbox-reaper"

#define TVS_MODE_SANDBOX "sandbox"
#define TVS_MODE_DIRECT "direct"
#define TVS_MODE_DIRECT_TERMINAL "direct-terminal"
#define TVS_MODE_NOOP "noop"
#define TVS_MODE_PROC_TRIAL "proc-trial"

#define TVS_FD_LIVENESS 3
#define TVS_FD_REPORT 4
#define TVS_FD_GO 5

#define TVS_REPORT_SECCOMP "seccomp"
#define TVS_REPORT_STARTED "started"
#define TVS_REPORT_EXEC_ERR "exec-err"
#define TVS_REPORT_EXITED "exited"
#define TVS_REPORT_SIGNALED "signaled"
#define TVS_REPORT_ERROR "error"

const char *tvs_constant(int i);
int tvs_fd(int i);

#endif
