//! Plumbing: processes, the subject's pipes, the fakes' side channel, signals. Nothing here
//! knows what a scenario or a verdict is.

pub mod cgroup;
pub mod cpu_load;
pub mod interrupt;
pub mod keeper;
pub mod own_tree;
pub mod peers;
pub mod pids;
pub mod pool;
pub mod router;
pub mod run_id;
pub mod scratch;
pub mod settle;
pub mod side;
pub mod side_gate;
pub mod side_index;
pub mod side_read;
pub mod stderr_log;
pub mod stdio_links;
pub mod subject_process;
