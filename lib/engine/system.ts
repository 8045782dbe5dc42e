/**
 * Engine system endpoints: `GET /_ping`, `GET /version`, `GET /info` (Docker Engine API
 * v1.44–v1.52, "System" group). Schemas validate the fields this project reads and let
 * the rest through.
 *
 * @module
 */
import { z } from "zod";

/** Schema of the `GET /version` reply (fields this project reads). */
export const engineVersionSchema = z.looseObject({
  Version: z.string().max(256),
  ApiVersion: z.string().max(32),
  MinAPIVersion: z.string().max(32).optional(),
  Os: z.string().max(64),
  Arch: z.string().max(64),
  KernelVersion: z.string().max(256).optional(),
});

/** The validated `GET /version` reply. */
export type EngineVersion = z.infer<typeof engineVersionSchema>;

/** Schema of the `GET /info` reply (fields this project reads for admission). */
export const engineInfoSchema = z.looseObject({
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
});

/** The validated `GET /info` reply. */
export type EngineInfo = z.infer<typeof engineInfoSchema>;
