/**
 * Engine system endpoints: `GET /_ping`, `GET /version`, `GET /info` (Docker Engine API
 * v1.44–v1.52, "System" group). Schemas validate the fields this project reads and let
 * the rest through.
 *
 * @module
 */
import { z } from "zod";

/** The `GET /version` reply: the fields this project reads (others pass through). */
export interface EngineVersion {
  /** Engine version, e.g. `28.5.2`. */
  readonly Version: string;
  /** Highest API version the daemon speaks, e.g. `1.51`. */
  readonly ApiVersion: string;
  /** Lowest API version the daemon accepts. */
  readonly MinAPIVersion?: string;
  /** Daemon OS (`linux`). */
  readonly Os: string;
  /** Daemon architecture in Go terms (`amd64`, `arm64`). */
  readonly Arch: string;
  /** Kernel version. */
  readonly KernelVersion?: string;
}

/** The `GET /info` reply: the fields admission reads (others pass through). */
export interface EngineInfo {
  /** Daemon ID. */
  readonly ID?: string;
  /** Host name of the daemon. */
  readonly Name?: string;
  /** Engine version. */
  readonly ServerVersion: string;
  /** Host OS description; `Docker Desktop` on Docker Desktop. */
  readonly OperatingSystem: string;
  /** `linux` for Linux containers. */
  readonly OSType: string;
  /** Kernel architecture (`x86_64`, `aarch64`). */
  readonly Architecture: string;
  /** Storage driver. */
  readonly Driver: string;
  /** Storage driver details. */
  readonly DriverStatus?: readonly (readonly string[])[] | null;
  /** `cgroupfs`, `systemd` or `none`. */
  readonly CgroupDriver: string;
  /** `1` or `2`. */
  readonly CgroupVersion: string;
  /** Memory limit support. */
  readonly MemoryLimit: boolean;
  /** Swap limit support. */
  readonly SwapLimit: boolean;
  /** PID limit support. */
  readonly PidsLimit: boolean;
  /** CFS period support. */
  readonly CpuCfsPeriod: boolean;
  /** CFS quota support. */
  readonly CpuCfsQuota: boolean;
  /** Security options, e.g. `name=seccomp,profile=builtin`, `name=rootless`. */
  readonly SecurityOptions: readonly string[] | null;
  /** Data root. */
  readonly DockerRootDir?: string;
  /** Daemon warnings. */
  readonly Warnings?: readonly string[] | null;
  /**
   * OCI runtimes registered with the daemon, by name (`runc`, and e.g. `runsc` from the
   * daemon config's `runtimes`), each with its `path` and `runtimeArgs` (API v1.25+).
   */
  readonly Runtimes?: Readonly<Record<string, { readonly path?: string; readonly runtimeArgs?: readonly string[] | null }>> | null;
  /** Runtime of containers that name none (`runc` unless configured otherwise). */
  readonly DefaultRuntime?: string;
  /**
   * Whether `net.ipv4.ip_forward` was on when the daemon started (read once then, not
   * again: measured on Engine 28.5.2, 2026-12-02). When `false`, every container create on a
   * bridge network warns "IPv4 forwarding is disabled. Networking will not work."
   */
  readonly IPv4Forwarding?: boolean;
  /** CPUs the daemon's host has (`NCPU`). */
  readonly NCPU?: number;
  /** Memory the daemon's host has, in bytes (`MemTotal`). */
  readonly MemTotal?: number;
}

/** Schema of the `GET /version` reply. */
export const engineVersionSchema: z.ZodType<EngineVersion> = z.looseObject({
  Version: z.string().max(256),
  ApiVersion: z.string().max(32),
  MinAPIVersion: z.string().max(32).optional(),
  Os: z.string().max(64),
  Arch: z.string().max(64),
  KernelVersion: z.string().max(256).optional(),
});

/** Schema of the `GET /info` reply. */
export const engineInfoSchema: z.ZodType<EngineInfo> = z.looseObject({
  ID: z.string().max(256).optional(),
  Name: z.string().max(256).optional(),
  ServerVersion: z.string().max(256),
  OperatingSystem: z.string().max(256),
  OSType: z.string().max(64),
  Architecture: z.string().max(64),
  Driver: z.string().max(128),
  DriverStatus: z.array(z.array(z.string())).nullable().optional(),
  CgroupDriver: z.string().max(64),
  CgroupVersion: z.string().max(8),
  MemoryLimit: z.boolean(),
  SwapLimit: z.boolean(),
  PidsLimit: z.boolean(),
  CpuCfsPeriod: z.boolean(),
  CpuCfsQuota: z.boolean(),
  SecurityOptions: z.array(z.string().max(1024)).max(64).nullable(),
  DockerRootDir: z.string().max(4096).optional(),
  Warnings: z.array(z.string()).nullable().optional(),
  Runtimes: z.record(
    z.string().max(256),
    z.looseObject({ path: z.string().max(4096).optional(), runtimeArgs: z.array(z.string().max(4096)).max(256).nullable().optional() }),
  ).nullable().optional(),
  DefaultRuntime: z.string().max(256).optional(),
  IPv4Forwarding: z.boolean().optional(),
  NCPU: z.number().int().nonnegative().optional(),
  MemTotal: z.number().int().nonnegative().optional(),
});
