from agentkit import ScheduleContext, define_schedule


async def check_failing(ctx: ScheduleContext) -> None:
    # Hand the work into the drive channel so its delivery handler posts the result.
    ctx.wait_until(
        ctx.receive(
            "drive",
            message="Check open pull requests for failing checks. Report only if any fail.",
            auth=ctx.app_auth,
        )
    )


schedule = define_schedule(cron="*/30 * * * *", run=check_failing)
