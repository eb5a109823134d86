/**
 * CallHeldBack: the rejection of BtServices.callDevice for a call a transition leaving AUTO held
 * back, unsent (the mode gate refuses the tree's actuating calls while that transition's
 * before_transition hooks run, so that what a hook stops stays stopped). It is no outcome of the
 * call: the CallDevice node stays RUNNING and asks again at its next tick, until the commit halts
 * the tree (the call is then abandoned, as a halt abandons any) or a veto lets the call go out.
 * Outside bt/: the engine's adapter makes one without loading the tree engine at start-up.
 */
export class CallHeldBack extends Error {
  /** `refusal`: the mode gate's refusal, for its message. */
  constructor(readonly refusal: unknown) {
    super(refusal instanceof Error ? refusal.message : String(refusal));
    this.name = "CallHeldBack";
  }
}
