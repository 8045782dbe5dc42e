// The `GET /containers/{id}/json` answer of a running keeper, as the unit tests' scripted
// fake Engines give it: only the fields the backend's inspect schema reads.

/** A running keeper `id` with no exec (`ExecIDs: null`), as JSON text. */
export function keeperInspect(id: string): string {
  return JSON.stringify({
    Id: id,
    Name: "/keeper",
    Image: `sha256:${"a".repeat(64)}`,
    State: { Status: "running", Running: true, Pid: 42, ExitCode: 0 },
    Config: { User: "1000:1000", Env: [], Entrypoint: null, Cmd: null, WorkingDir: "/", Image: "x", Labels: {}, Tty: false, OpenStdin: false },
    HostConfig: {
      ReadonlyRootfs: true,
      CapAdd: null,
      CapDrop: ["ALL"],
      SecurityOpt: null,
      PidMode: "",
      IpcMode: "private",
      UsernsMode: "",
      Memory: 0,
      MemorySwap: 0,
      NanoCpus: 0,
      PidsLimit: null,
      NetworkMode: "none",
      Binds: null,
      Privileged: false,
      Devices: null,
      PortBindings: null,
      PublishAllPorts: false,
    },
    Mounts: [],
    ExecIDs: null,
  });
}
