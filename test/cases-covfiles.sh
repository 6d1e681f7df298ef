# File states zdtm found refused (issue 24, covfiles): /proc files of the
# process itself, removed directories, inotify watches on removed files,
# large ghosts. Each target checks itself after restore.

# ---- files of its own /proc directory (zdtm memfd02, cgroup_ignore)

# /proc/self/maps (offset kept) and /proc/self/status: opened again by the
# restored process once it has its PID (t-procself).
add procself-rst case_f2_rst t-procself
add procself-lr case_f2_lr t-procself
