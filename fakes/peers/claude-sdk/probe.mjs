// One `query()` of the real Claude Agent SDK against a stub CLI (a script run with node), for
// the probes that ask the SDK how it drives the CLI (order.mjs, argv.mjs): the task's prompt,
// the stub's environment, `options` beside the ones every probe passes, cut off after `ms`.
export async function probe(sdkPath, stub, env, options, ms) {
  const { query } = await import(sdkPath);
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), ms);
  try {
    for await (const _ of query({
      prompt: 'Carry out the scripted task.',
      options: {
        pathToClaudeCodeExecutable: stub,
        executable: 'node',
        env: { ...process.env, ...env },
        abortController: abort,
        persistSession: false,
        stderr: () => {},
        ...options,
      },
    })) { /* the stub answers nothing a probe needs */ }
  } catch { /* aborted, or the stub exited */ }
  clearTimeout(timer);
}
