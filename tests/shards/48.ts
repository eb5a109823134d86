/** Shard 48 of the suite (tests/shards/shard.ts). */
import { runShard } from "./shard.ts";

await runShard(48);
